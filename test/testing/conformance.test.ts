import { MemoryLockStore } from 'resil';
import {
  describeInstanceRegistryConformance,
  describeLockStoreConformance,
  describeRunLedgerConformance,
} from 'resil/testing';
import { describe, expect, it } from 'vitest';

const test = { describe, it, expect };

// MemoryLockStore runs the same suites a Redis, PostgreSQL or custom store author runs.
describeLockStoreConformance('MemoryLockStore', () => new MemoryLockStore(), { test });
describeRunLedgerConformance('MemoryLockStore', () => new MemoryLockStore(), { test });
describeInstanceRegistryConformance('MemoryLockStore', () => new MemoryLockStore(), { test });
