import { systemTimeProvider, type TimeProvider } from '../../pipeline/time.ts';
import { StaleTokenError } from './errors.ts';
import type { RunLedger, RunRecord } from './run-ledger.ts';
import type { LeaseInfo, LockStore } from './store.ts';

export interface MemoryLockStoreOptions {
  /** The clock that judges expiry and retention. Defaults to the system clock. */
  timeProvider?: TimeProvider;
}

interface KeyState {
  /** The last token issued for the key; kept after release and expiry so tokens never repeat. */
  token: number;
  /** The current holder, or `undefined` once released. */
  owner: string | undefined;
  /** Epoch ms by the store's clock. */
  expiresAt: number;
}

interface JobLedger {
  highestToken: number;
  retentionMs: number;
  /** Completed occurrences (epoch ms). */
  readonly completed: Set<number>;
  /** Newest first. */
  history: RunRecord[];
}

const defaultRetentionMs = 7 * 86_400_000;
const defaultHistoryLimit = 20;

/**
 * A {@link LockStore} (and {@link RunLedger}) in this process's memory: excludes executions inside
 * one process only. Each operation runs synchronously, so it is atomic per key. It keeps one token
 * counter per key ever locked, so tokens stay monotonic across release and expiry; that is fine
 * unless your keys are unbounded. No timers: expiry is judged lazily by `timeProvider.now()`.
 *
 * The lock strategy's default store is one of these per time provider.
 *
 * @example
 * const store = new MemoryLockStore();
 * const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'rebuild-cache', store }).build();
 */
export class MemoryLockStore implements LockStore, RunLedger {
  readonly #time: TimeProvider;
  readonly #keys = new Map<string, KeyState>();
  readonly #jobs = new Map<string, JobLedger>();

  constructor(options: MemoryLockStoreOptions = {}) {
    this.#time = options.timeProvider ?? systemTimeProvider;
  }

  async acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    const now = this.#time.now();
    const state = this.#keys.get(key);
    if (state === undefined) {
      this.#keys.set(key, { token: 1, owner, expiresAt: now + ttlMs });
      return 1;
    }
    if (state.owner !== undefined && state.expiresAt > now) return undefined;
    state.token++;
    state.owner = owner;
    state.expiresAt = now + ttlMs;
    return state.token;
  }

  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = this.#time.now();
    const state = this.#live(key, now);
    if (state?.owner !== owner) return false;
    state.expiresAt = now + ttlMs;
    return true;
  }

  async release(key: string, owner: string): Promise<void> {
    const state = this.#live(key, this.#time.now());
    if (state?.owner === owner) state.owner = undefined;
  }

  async inspect(key: string): Promise<LeaseInfo | undefined> {
    const state = this.#live(key, this.#time.now());
    if (state === undefined) return undefined;
    return { owner: state.owner!, token: state.token, expiresAt: new Date(state.expiresAt) };
  }

  async now(): Promise<number> {
    return this.#time.now();
  }

  async isCompleted(job: string, scheduledAt: number): Promise<boolean> {
    const ledger = this.#jobs.get(job);
    if (!ledger?.completed.has(scheduledAt)) return false;
    return scheduledAt >= this.#time.now() - ledger.retentionMs;
  }

  async recordRun(
    record: RunRecord,
    options: { retentionMs?: number; historyLimit?: number } = {},
  ): Promise<void> {
    let ledger = this.#jobs.get(record.job);
    if (ledger !== undefined && record.token < ledger.highestToken) {
      throw new StaleTokenError(record.job, record.token, ledger.highestToken);
    }
    if (ledger === undefined) {
      ledger = {
        highestToken: record.token,
        retentionMs: defaultRetentionMs,
        completed: new Set(),
        history: [],
      };
      this.#jobs.set(record.job, ledger);
    }
    ledger.highestToken = record.token;
    ledger.retentionMs = options.retentionMs ?? defaultRetentionMs;
    ledger.history.unshift({ ...record });
    ledger.history.length = Math.min(ledger.history.length, options.historyLimit ?? defaultHistoryLimit);
    if (record.outcome === 'success') ledger.completed.add(record.scheduledAt);
    this.#dropExpired(ledger);
  }

  async runHistory(job: string, limit = defaultHistoryLimit): Promise<RunRecord[]> {
    const history = this.#jobs.get(job)?.history ?? [];
    return history.slice(0, limit).map((record) => ({ ...record }));
  }

  async lastCompleted(job: string): Promise<number | undefined> {
    const ledger = this.#jobs.get(job);
    if (ledger === undefined) return undefined;
    const oldestKept = this.#time.now() - ledger.retentionMs;
    let latest: number | undefined;
    for (const scheduledAt of ledger.completed) {
      if (scheduledAt >= oldestKept && (latest === undefined || scheduledAt > latest)) latest = scheduledAt;
    }
    return latest;
  }

  /** The key's state while a lease is live on it, else `undefined`. */
  #live(key: string, now: number): KeyState | undefined {
    const state = this.#keys.get(key);
    return state !== undefined && state.owner !== undefined && state.expiresAt > now ? state : undefined;
  }

  /** Reads judge retention too, so pruning on writes alone is enough to bound memory. */
  #dropExpired(ledger: JobLedger): void {
    const oldestKept = this.#time.now() - ledger.retentionMs;
    for (const scheduledAt of ledger.completed) {
      if (scheduledAt < oldestKept) ledger.completed.delete(scheduledAt);
    }
  }
}

const defaultStores = new WeakMap<TimeProvider, MemoryLockStore>();

/**
 * The lock strategy's default store: one `MemoryLockStore` per time provider, shared by every lock
 * built with it, so locks on the system clock exclude each other process-wide, and leases on a
 * `FakeTimeProvider` expire on that fake clock.
 */
export function defaultLockStoreFor(timeProvider: TimeProvider): MemoryLockStore {
  let store = defaultStores.get(timeProvider);
  if (store === undefined) {
    store = new MemoryLockStore({ timeProvider });
    defaultStores.set(timeProvider, store);
  }
  return store;
}
