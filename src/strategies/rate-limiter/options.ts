import type { ResilienceContext } from '../../pipeline/context.ts';
import type { Duration } from '../../pipeline/duration.ts';
import type { TimeProvider } from '../../pipeline/time.ts';
import type { RateLimiter } from './limiter.ts';
import type { SharedRateLimitStore } from './shared.ts';

/** Token bucket: a burst of up to `tokenLimit`, refilled by `tokensPerPeriod` every `replenishmentPeriod`. */
export interface TokenBucketRateLimiterOptions {
  /** Tokens the bucket holds (the largest burst). It starts full. A whole number >= 1. Required. */
  tokenLimit: number;
  /** Tokens added every `replenishmentPeriod`, up to `tokenLimit`. Defaults to `tokenLimit`. A whole number >= 1. */
  tokensPerPeriod?: number;
  /** How often tokens are added. Defaults to 1 s. > 0. */
  replenishmentPeriod?: Duration;
  /** Requests that may wait (first in, first out) for a token. Defaults to 0. A whole number >= 0. */
  queueLimit?: number;
}

/**
 * Sliding window: at most `permitLimit` permits in any `window`, tracked in `segmentsPerWindow`
 * segments; a segment's permits come back when it slides out of the window.
 */
export interface SlidingWindowRateLimiterOptions {
  /** Permits per window. A whole number >= 1. Required. */
  permitLimit: number;
  /** The window length. Defaults to 1 s. > 0. */
  window?: Duration;
  /** Segments the window is divided into (its resolution). Defaults to 10. A whole number >= 1. */
  segmentsPerWindow?: number;
  /** Requests that may wait (first in, first out) for a permit. Defaults to 0. A whole number >= 0. */
  queueLimit?: number;
}

/** Options of a limiter made outside a pipeline (to share one limit between pipelines). */
export interface StandaloneLimiterOptions {
  /** The clock. Defaults to the system clock. */
  timeProvider?: TimeProvider;
}

export interface OnRateLimiterRejectedArguments {
  readonly context: ResilienceContext;
  /** Milliseconds until a permit is expected to be free, when the limiter knows. */
  readonly retryAfter: number | undefined;
}

interface RateLimiterCallbacks {
  /**
   * Called when an execution is rejected, before the rejection is returned. If it throws, the
   * execution fails with its error instead.
   */
  onRejected?: (args: OnRateLimiterRejectedArguments) => void | PromiseLike<void>;
}

/**
 * One budget for a fleet: with `store`, every process using the same store and `key` shares the
 * limit (see docs/strategies/rate-limiter.md, "Fleet-wide").
 */
export interface SharedRateLimiterOptions {
  /**
   * Where the shared budget lives: `RedisLockStore`, `PostgresLockStore`, `MysqlLockStore` or
   * `MemoryLockStore` (this process only). Without it the limit is this pipeline's own.
   */
  store?: SharedRateLimitStore;
  /** The shared limit's name in the store; required with `store`. Limiters with the same key share one budget. */
  key?: string;
  /** How long a call waits for the store before deciding in this process. Defaults to 500 ms. */
  storeTimeout?: Duration;
}

type Without<T> = { [K in keyof T]?: never };

/**
 * One of: token bucket options (`tokenLimit`, ...), sliding window options (`permitLimit`,
 * `window`, ...), or `limiter`, a {@link RateLimiter} you created (shared between pipelines).
 * A limiter made from options belongs to the built pipeline, unless `store` and `key` make its
 * budget the fleet's.
 */
export type RateLimiterStrategyOptions = RateLimiterCallbacks &
  (
    | (TokenBucketRateLimiterOptions &
        SharedRateLimiterOptions &
        Without<Omit<SlidingWindowRateLimiterOptions, 'queueLimit'>> & {
          limiter?: never;
        })
    | (SlidingWindowRateLimiterOptions &
        SharedRateLimiterOptions &
        Without<Omit<TokenBucketRateLimiterOptions, 'queueLimit'>> & {
          limiter?: never;
        })
    | ({ limiter: RateLimiter } & Without<
        TokenBucketRateLimiterOptions & SlidingWindowRateLimiterOptions & SharedRateLimiterOptions
      >)
  );
