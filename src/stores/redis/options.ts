import type { Duration } from '../../pipeline/duration.ts';

export interface RedisLockStoreOptions {
  /**
   * Namespace of every key the store writes (leases, token counters, run ledger, fences). Use one
   * per application sharing a Redis. Keys also get the client's own `keyPrefix`, if it has one.
   * Defaults to `'resil:'`.
   */
  prefix?: string;
  /**
   * Bound on each store operation, waiting for the connection to become ready included. When it
   * runs out the operation fails with `StoreUnavailableError` (the lock fails closed) and the
   * command is not left queued: the store only hands a command to the client once the connection
   * is ready. An acquire whose reply came too late is followed by a release, so a late execution
   * does not hold the key for a whole ttl. From 10 ms to 1 h. Defaults to 2 s.
   */
  commandTimeout?: Duration;
  /**
   * Replicas that must acknowledge each acquire, renew, ledger write and fenced write before it
   * counts (`WAIT numReplicas timeout`, sent in the same round trip). When fewer acknowledge
   * within `replicaTimeout`, the operation fails with `StoreUnavailableError` (an acquire is
   * released again). What each setting guarantees on a failover:
   *
   * - `0`: replication is asynchronous, so a failover can lose the latest acquires: their leases
   *   (a second holder for up to one ttl) and their token increments, so the new master can hand
   *   out a token that was already issued, or a lower one. Fencing then cannot tell the two
   *   holders apart.
   * - `n` >= 1: a lease or token the store reported is on the master and `n` replicas; a failover
   *   that promotes one of those keeps them. Set it to the number of replicas to cover any
   *   promotion. It is not consensus: a promoted replica outside those `n`, or one restarted
   *   without persistence, can still miss it.
   *
   * Defaults to 0.
   */
  waitForReplicas?: number;
  /** How long `WAIT` may block when `waitForReplicas` > 0; less than `commandTimeout`. Defaults to 500 ms. */
  replicaTimeout?: Duration;
  /**
   * Wake waiters when a lease is released: while a lock waits for a key held elsewhere
   * (`lock.wait`), the store sets the key's `<prefix>{<key>}:waiters` (30 s, renewed while it
   * waits) and subscribes to the key's channel (`<prefix>{<key>}:released`) on one connection of
   * its own (`client.duplicate()`, so the same options, TLS and credentials), closed when nobody
   * waits; a release publishes on the channel while `waiters` is there. `false`: waiters only poll
   * (50 ms, doubling up to 1 s), and the store never opens a connection.
   * Defaults to true.
   */
  releaseNotifications?: boolean;
}

/** Options of {@link RedisLockStore.fencedSet}. */
export interface FencedSetOptions {
  /** Expire the value after this long (`PX`). Defaults to never. */
  ttl?: Duration;
}
