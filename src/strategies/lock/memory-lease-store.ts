import { systemTimeProvider, type TimeProvider } from '../../pipeline/time.ts';
import type { LeaseInfo, LockStore } from './store.ts';

export interface MemoryLeaseStoreOptions {
  /** The clock that judges expiry and retention. Defaults to the system clock. */
  timeProvider?: TimeProvider;
}

/** @internal A key's lease state, shared with the run ledger of `MemoryLockStore`. */
export interface KeyState {
  /** The last token issued for the key; kept after release and expiry so tokens never repeat. */
  token: number;
  /** The current holder, or `undefined` once released. */
  owner: string | undefined;
  /** Epoch ms by the store's clock. */
  expiresAt: number;
  /** The occurrence the live lease was granted to by `claimOccurrence`, if any. */
  current?: { readonly job: string; readonly scheduledAt: number };
}

/**
 * The lease half of `MemoryLockStore`: a {@link LockStore} in this process's memory, without the
 * run ledger, so a browser bundle with a lock strategy does not carry the scheduler's ledger. Each
 * operation runs synchronously, so it is atomic per key; one token counter per key ever locked
 * keeps tokens monotonic across release and expiry. No timers: expiry is judged lazily.
 */
export class MemoryLeaseStore implements LockStore {
  /** Its leases live in this process only. */
  readonly processLocal = true;
  readonly storeName: string = 'MemoryLockStore';
  /** @internal */
  protected readonly time: TimeProvider;
  /** @internal */
  protected readonly keys = new Map<string, KeyState>();
  /** The waiters' listeners per key (see `onRelease`). */
  readonly #releaseListeners = new Map<string, Set<() => void>>();

  constructor(options: MemoryLeaseStoreOptions = {}) {
    this.time = options.timeProvider ?? systemTimeProvider;
  }

  async acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    const now = this.time.now();
    const state = this.keys.get(key);
    if (state === undefined) {
      this.keys.set(key, { token: 1, owner, expiresAt: now + ttlMs });
      return 1;
    }
    if (state.owner !== undefined && state.expiresAt > now) return undefined;
    state.token++;
    state.owner = owner;
    state.expiresAt = now + ttlMs;
    state.current = undefined;
    return state.token;
  }

  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = this.time.now();
    const state = this.live(key, now);
    if (state?.owner !== owner) return false;
    state.expiresAt = now + ttlMs;
    return true;
  }

  async release(key: string, owner: string): Promise<void> {
    const state = this.live(key, this.time.now());
    if (state?.owner !== owner) return;
    state.owner = undefined;
    this.notifyReleased(key);
  }

  /** Wakes the waiters of `key` (`onRelease`): its lease was just given up. */
  /** @internal */
  protected notifyReleased(key: string): void {
    const listeners = this.#releaseListeners.get(key);
    if (listeners !== undefined) for (const listener of [...listeners]) notify(listener);
  }

  /** Calls `listener` at once (in a microtask) and after every release of a lease on `key` in this store. */
  onRelease(key: string, listener: () => void): () => void {
    let listeners = this.#releaseListeners.get(key);
    if (listeners === undefined) {
      listeners = new Set();
      this.#releaseListeners.set(key, listeners);
    }
    // Its own entry, so that one function subscribed twice is called twice and unsubscribed once.
    const entry = () => listener();
    listeners.add(entry);
    // In place at once; the first call says so, as a remote store's does once it has subscribed.
    queueMicrotask(() => {
      if (listeners.has(entry)) notify(entry);
    });
    return () => {
      listeners.delete(entry);
      if (listeners.size === 0 && this.#releaseListeners.get(key) === listeners) {
        this.#releaseListeners.delete(key);
      }
    };
  }

  async inspect(key: string): Promise<LeaseInfo | undefined> {
    const state = this.live(key, this.time.now());
    if (state === undefined) return undefined;
    return { owner: state.owner!, token: state.token, expiresAt: new Date(state.expiresAt) };
  }

  async now(): Promise<number> {
    return this.time.now();
  }

  /** The key's state while a lease is live on it, else `undefined`. */
  /** @internal */
  protected live(key: string, now: number): KeyState | undefined {
    const state = this.keys.get(key);
    return state !== undefined && state.owner !== undefined && state.expiresAt > now ? state : undefined;
  }
}

/** A waiter's listener: what it throws must not fail the release that woke it. */
function notify(listener: () => void): void {
  try {
    listener();
  } catch {
    // The waiter polls anyway.
  }
}

const defaultStores = new WeakMap<TimeProvider, MemoryLeaseStore>();

/**
 * The lock strategy's default store: one `MemoryLeaseStore` per time provider, shared by every lock
 * built with it, so locks on the system clock exclude each other process-wide, and leases on a
 * `FakeTimeProvider` expire on that fake clock.
 */
export function defaultLockStoreFor(timeProvider: TimeProvider): MemoryLeaseStore {
  let store = defaultStores.get(timeProvider);
  if (store === undefined) {
    store = new MemoryLeaseStore({ timeProvider });
    defaultStores.set(timeProvider, store);
  }
  return store;
}
