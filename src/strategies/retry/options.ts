import type { ResilienceContext } from '../../pipeline/context.ts';
import type { Duration } from '../../pipeline/duration.ts';
import type { Outcome } from '../../pipeline/outcome.ts';

/** How delays grow from one retry to the next. */
export type BackoffType = 'constant' | 'linear' | 'exponential';

export interface RetryPredicateArguments {
  /** The attempt's outcome: `outcome.ok` with `value`, or `error`. */
  readonly outcome: Outcome<unknown, unknown>;
  readonly context: ResilienceContext;
  /** Zero-based number of the attempt that produced `outcome` (0 = the first call). */
  readonly attemptNumber: number;
}

export interface RetryDelayGeneratorArguments extends RetryPredicateArguments {}

export interface OnRetryArguments extends RetryPredicateArguments {
  /** How long the strategy waits before the next attempt, in milliseconds. */
  readonly retryDelay: number;
  /** How long the failed attempt took (including `shouldHandle`), in milliseconds. */
  readonly duration: number;
}

/**
 * Options of the retry strategy. Names, defaults and formulas are Polly v8's.
 *
 * @example
 * retryStrategy({
 *   maxRetryAttempts: 5,
 *   delay: '200ms',
 *   backoffType: 'exponential',
 *   useJitter: true,
 *   maxDelay: '10s',
 *   shouldHandle: ({ outcome }) => !outcome.ok && isTransient(outcome.error),
 *   onRetry: ({ attemptNumber, retryDelay }) => log.warn({ attemptNumber, retryDelay }, 'retrying'),
 * })
 */
export interface RetryStrategyOptions {
  /** Retries after the first attempt: a whole number >= 1, or `Infinity`. Defaults to 3. */
  maxRetryAttempts?: number;
  /**
   * Base delay between attempts, shaped by `backoffType`. From 0 to 1 day. Defaults to 2 s.
   * With `exponential` + `useJitter` it is the median of the first delay.
   */
  delay?: Duration;
  /**
   * `constant`: `delay` every time; `linear`: `delay * (n + 1)`; `exponential`:
   * `delay * 2^n`, for the retry after attempt `n` (zero-based). Defaults to `'constant'`.
   */
  backoffType?: BackoffType;
  /**
   * Randomizes delays: +-25% for constant and linear, decorrelated jitter (Polly's V2 formula)
   * for exponential. Defaults to false.
   */
  useJitter?: boolean;
  /** Caps the computed delays (not those returned by `delayGenerator`). From 0 to 1 day. Defaults to no cap. */
  maxDelay?: Duration;
  /**
   * Decides whether an outcome is retried. Defaults to every error except an abort of the
   * caller's signal (`handleErrorsExceptAbort`); successful values are not retried.
   * Whatever it says, nothing is retried once the caller's signal has aborted.
   */
  shouldHandle?: (args: RetryPredicateArguments) => boolean | PromiseLike<boolean>;
  /**
   * Overrides the computed delay for one retry. Return `undefined` (or an invalid duration) to
   * keep the computed one. Defaults to none.
   */
  delayGenerator?: (
    args: RetryDelayGeneratorArguments,
  ) => Duration | undefined | PromiseLike<Duration | undefined>;
  /** Called before each retry's delay; the delay starts when it settles. Defaults to none. */
  onRetry?: (args: OnRetryArguments) => void | PromiseLike<void>;
  /** Source of randomness for jitter, returning [0, 1). Defaults to `Math.random`. */
  randomizer?: () => number;
}
