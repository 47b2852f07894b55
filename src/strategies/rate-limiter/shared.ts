import type { ResilienceContext } from '../../pipeline/context.ts';
import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import type { RateLimiter } from './limiter.ts';
import type { RateLimiterStrategyOptions } from './options.ts';

/**
 * The rate limiter's fleet-wide budget as a store keeps it: a GCRA (generic cell rate algorithm,
 * a token bucket kept as one number, the "theoretical arrival time" of the next permit). A permit
 * is granted when the key's arrival time is at most `(burst - 1) * intervalMs` ahead of the
 * store's clock, and then moves `intervalMs` further; a full bucket is a key at or behind the clock.
 */
export interface SharedRateLimitPolicy {
  /** Milliseconds between two permits at the sustained rate (> 0). */
  readonly intervalMs: number;
  /** Permits that may be granted at once: the bucket's size (a whole number >= 1). */
  readonly burst: number;
}

/**
 * What a store does for a fleet-wide rate limiter: one atomic decision per call, on the store's
 * clock. `take` resolves to 0 when a permit was taken from `key`'s budget, else to the
 * milliseconds until one is expected (> 0), and rejects when the store failed.
 */
export interface RateLimitPermits {
  take(key: string, policy: SharedRateLimitPolicy): Promise<number>;
  /** Throws `InvalidKeyError` when the store cannot keep `key`. */
  checkKey?(key: string): void;
}

/**
 * A store that can hold a rate limit shared by every process using it (`RedisLockStore`,
 * `PostgresLockStore`, `MysqlLockStore`, `MemoryLockStore`): the rate limiter strategy's `store`
 * option. The store makes the limiter (a `SharedRateLimiter` on its own `RateLimitPermits`), so that
 * a pipeline without a store carries none of this code.
 */
export interface SharedRateLimitStore {
  /**
   * A limiter whose permits come from `options.key`'s budget in this store, falling back to a
   * limiter in this process while the store fails. Called by the rate limiter strategy; the
   * options are the strategy's.
   */
  sharedRateLimiter(options: RateLimiterStrategyOptions, environment: StrategyEnvironment): RateLimiter;
}

/** True for a store that can hold a shared rate limit (see {@link SharedRateLimitStore}). */
export function isSharedRateLimitStore(value: unknown): value is SharedRateLimitStore {
  return typeof (value as Partial<SharedRateLimitStore> | null | undefined)?.sharedRateLimiter === 'function';
}

/** The arguments of the `OnRateLimiterStoreUnavailable` telemetry event. */
export interface OnRateLimiterStoreUnavailableArguments {
  readonly context: ResilienceContext;
  /** The shared limit's key. */
  readonly key: string;
  /** Why the store did not decide: its error, or `StoreUnavailableError` when it did not answer in `storeTimeout`. */
  readonly error: unknown;
  /** Milliseconds during which this limiter now decides locally before asking the store again. */
  readonly localFor: number;
}
