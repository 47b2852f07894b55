import type { ResilienceContext } from '../../pipeline/context.ts';
import type { Duration } from '../../pipeline/duration.ts';
import type { LockStore } from './store.ts';

/** Arguments of `onLockLost` and of the `OnLockLost` / `OnLockRejected` telemetry events. */
export interface LockEventArguments {
  /** The context the lock strategy was called with. */
  readonly context: ResilienceContext;
  /** The lock key of this execution. */
  readonly key: string;
}

/** Arguments of the `OnLockRenewFailed` and `OnLockReleaseFailed` telemetry events. */
export interface LockStoreErrorArguments extends LockEventArguments {
  /** What the store threw. */
  readonly error: unknown;
}

export interface LockStrategyOptions {
  /**
   * The lock key for an execution. Required. If it throws, the execution fails with its error
   * (with `InvalidOptionError` if it returns anything but a non-empty string); the callback does
   * not run.
   *
   * @example () => 'nightly-report'
   * @example (context) => `order:${context.operationKey}`
   */
  key: (context: ResilienceContext) => string;
  /**
   * Lease length, renewed every `ttl / 3` while the callback runs. Bounds how long a crashed
   * holder blocks others. Defaults to 30 s. Must be > 0.
   */
  ttl?: Duration;
  /**
   * How long to wait for a lock held elsewhere (polling 50 ms, doubling up to 1 s) before failing
   * with `LockNotAcquiredError`. Defaults to 0: fail fast.
   */
  wait?: Duration;
  /**
   * Where leases live. Defaults to one `MemoryLockStore` per time provider, shared by every lock on
   * pipelines built with that provider (one per process with the system clock). Use a distributed
   * store (`RedisLockStore`, `PostgresLockStore`) to lock across processes.
   */
  store?: LockStore;
  /**
   * Called when the lease is lost while the callback runs (renewal refused, or not renewed before
   * it expired). The callback's signal is aborted with `LockLostError` just before. Errors it
   * throws are ignored.
   */
  onLockLost?: (args: LockEventArguments) => void | PromiseLike<void>;
  /**
   * Makes owner ids `<ownerPrefix>/<random id>` instead of a bare random id, so that whoever
   * inspects a lease (`resil lock status`) can tell which instance holds it. Must not contain
   * secrets: owner ids are stored and shown. Defaults to none.
   *
   * @example ownerPrefix: 'web-1'
   */
  ownerPrefix?: string;
}
