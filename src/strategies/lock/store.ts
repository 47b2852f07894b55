/** A live lease as a store reports it. */
export interface LeaseInfo {
  /** The owner id the holder acquired it under. */
  readonly owner: string;
  /** The fencing token of this acquisition. */
  readonly token: number;
  /** When the lease expires unless renewed, by the store's clock. */
  readonly expiresAt: Date;
}

/**
 * Lease storage behind the lock strategy. Every method must be atomic for its key, so stores
 * (memory, Redis, PostgreSQL, your own) can be swapped in. `resil/testing` has a conformance
 * suite that checks these rules against a real instance of a store.
 */
export interface LockStore {
  /**
   * If `key` has no live lease: store `{ owner, expires: now + ttlMs }`, bump the key's fencing
   * token and return it. Otherwise return `undefined`. Tokens only ever increase per key, also
   * across expiry and release.
   */
  acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined>;
  /** If the live lease on `key` belongs to `owner`: push its expiry to now + ttlMs and return true. Else false. */
  renew(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Delete the lease only if it belongs to `owner` (never a lease someone else took after expiry). */
  release(key: string, owner: string): Promise<void>;
  /** The live lease on `key`, or `undefined` when there is none. Used by `resil lock status`. */
  inspect?(key: string): Promise<LeaseInfo | undefined>;
  /** The store's own clock in epoch ms (Redis `TIME`, PostgreSQL `now()`). */
  now?(): Promise<number>;
  /**
   * Wakes a waiter when the lease on `key` may have become free, so that the lock strategy tries
   * to acquire at once instead of at its next poll. Calls `listener` once the subscription is in
   * place (a release may have come before it), after every `release()` of a lease on `key` through
   * any store sharing the same backend, and whenever notifications may have been missed (a
   * reconnect). Returns a function that ends the subscription.
   *
   * Best effort: the strategy keeps polling while it waits, so a lost notification only costs the
   * next poll, and a call when the key is taken again already only costs one acquire. Leases that
   * expire are not announced. `resil/testing`'s conformance suite checks it when a store has it.
   */
  onRelease?(key: string, listener: () => void): () => void;
  /**
   * True for a store whose leases and records only this process sees (`MemoryLockStore`): a
   * one-shot command on it (`resil lock status`, `resil instances`, the dashboard) then says that it
   * cannot see the fleet. Absent means shared.
   */
  readonly processLocal?: boolean;
  /**
   * The store's name in logs and on the dashboard (`RedisLockStore`): a class name would not
   * survive a minifier. Absent: `custom store`.
   */
  readonly storeName?: string;
  /**
   * Throws `InvalidKeyError` when the store cannot keep `key` (too long, or a character it cannot
   * store), as every method given that key would. `resil run` calls it for each job's lock key
   * when it loads the config, so such a job is refused there instead of failing every fire.
   */
  checkKey?(key: string): void;
}

/** The store's {@link LockStore.storeName}, or `custom store`. */
export function storeNameOf(store: LockStore): string {
  return typeof store.storeName === 'string' ? store.storeName : 'custom store';
}

/**
 * The longest key the shipped stores keep, in bytes of UTF-8: a PostgreSQL btree index row holds
 * at most about 2700 bytes, and a key shares its row with a job name of the same limit. Redis has
 * the same limit, so a config moves between the stores unchanged.
 */
export const storeKeyByteLimit = 1_000;

/** True for an object with the three methods of a {@link LockStore}. */
export function isLockStore(value: unknown): value is LockStore {
  if (typeof value !== 'object' || value === null) return false;
  const store = value as Partial<LockStore>;
  return (
    typeof store.acquire === 'function' &&
    typeof store.renew === 'function' &&
    typeof store.release === 'function'
  );
}
