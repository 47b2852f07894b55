import { hostname } from 'node:os';
import { MemoryLockStore } from '../ledger/memory-store.ts';
import { lockDefaults } from '../strategies/lock/defaults.ts';
import type { LockStore } from '../strategies/lock/store.ts';

/** Config defaults, applied into `ResolvedConfig`. A test pins each of them. */
export const configDefaults = {
  /** On SIGINT/SIGTERM, how long running jobs may finish before their signals abort, in ms. */
  shutdownGrace: 30_000,
  /** How long completed occurrences stay in the run ledger, in ms (7 days). */
  ledgerRetention: 7 * 86_400_000,
  /** How many of a job's latest records the run ledger keeps (more while they are inside their window). */
  ledgerRecordLimit: 100,
  /** A fire that starts later than this after its instant is skipped as `missed`, in ms. */
  startingDeadline: 60_000,
  /** Lease length of a job's lock, in ms: the lock strategy's default. */
  lockTtl: lockDefaults.ttl,
  /** A job's `lock.wait`, in ms: at least `lockTtl` (with no `overlap`) reads as `overlap: 'buffer-all'`. */
  lockWait: lockDefaults.wait,
  /** Where a job's `run` runs: in the runner's process. */
  isolation: 'none',
  /** A fixed local time inside a spring-forward gap runs at the first instant after the gap. */
  dst: 'shift',
} as const;

/** The store of a config that names none: this process's memory, which no other instance shares. */
export function defaultStore(): LockStore {
  return new MemoryLockStore();
}

/** The name of an instance whose config gives none: `<hostname>:<pid>`, unique across a fleet. */
export function defaultInstanceName(): string {
  return `${hostname()}:${process.pid}`;
}
