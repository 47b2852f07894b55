import type { SignalSource } from '../../pipeline/context.ts';

/** What a {@link RateLimiter} answers: a permit, or a rejection with the time to wait when known. */
export type RateLimitDecision =
  | { readonly granted: true; readonly retryAfter?: undefined }
  | { readonly granted: false; readonly retryAfter: number | undefined };

/** The one granted decision, shared so that the fast path allocates nothing. */
export const granted: RateLimitDecision = Object.freeze({ granted: true });

/**
 * A source of permits, one per execution. `TokenBucketRateLimiter` and `SlidingWindowRateLimiter`
 * ship; create one yourself and pass it as `limiter` to share a limit between pipelines.
 */
export interface RateLimiter {
  /**
   * Takes one permit: synchronously when one is free, or after waiting in the queue. A queued
   * request whose `signal` aborts leaves the queue, and the promise rejects with the abort reason.
   * `source.signal` is read only when the request must queue.
   */
  acquire(source: SignalSource): RateLimitDecision | Promise<RateLimitDecision>;
}
