import { MemoryLockStore } from 'resil';
import {
  describeInstanceRegistryConformance,
  describeLockStoreConformance,
  describeRunLedgerConformance,
} from 'resil/testing';

// MemoryLockStore runs the same suites a Redis, PostgreSQL or custom store author runs.
describeLockStoreConformance('MemoryLockStore', () => new MemoryLockStore());
describeRunLedgerConformance('MemoryLockStore', () => new MemoryLockStore());
describeInstanceRegistryConformance('MemoryLockStore', () => new MemoryLockStore());
