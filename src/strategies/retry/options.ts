import type { ResilienceContext } from '../../pipeline/context.ts';
import type { Duration } from '../../pipeline/duration.ts';
import type { Outcome } from '../../pipeline/outcome.ts';

export type BackoffType = 'constant' | 'linear' | 'exponential';

export interface RetryPredicateArguments {
  /** The attempt's outcome: `outcome.ok` with `value`, or `error`. */
  readonly outcome: Outcome<unknown, unknown>;
  readonly context: ResilienceContext;
  /** Zero-based number of the attempt that produced `outcome`. */
  readonly attemptNumber: number;
}

export interface RetryDelayGeneratorArguments extends RetryPredicateArguments {}

export interface OnRetryArguments extends RetryPredicateArguments {
  /** How long the strategy waits before the next attempt, in milliseconds. */
  readonly retryDelay: number;
  /** How long the failed attempt took, in milliseconds. */
  readonly duration: number;
}

export interface RetryStrategyOptions {
  /** Retries after the first attempt (Infinity for no limit). Defaults to 3. */
  maxRetryAttempts?: number;
  /** Base delay between attempts, shaped by `backoffType`. Defaults to 2 s. From 0 to 1 day. */
  delay?: Duration;
  /**
   * `constant`: `delay` every time; `linear`: `delay * (attempt + 1)`; `exponential`:
   * `delay * 2^attempt`. Defaults to `constant`.
   */
  backoffType?: BackoffType;
  /**
   * Randomizes delays: +-25% for constant and linear, decorrelated jitter (Polly's V2 formula)
   * for exponential. Defaults to false.
   */
  useJitter?: boolean;
  /** Caps computed delays (not those of `delayGenerator`). Defaults to no cap. */
  maxDelay?: Duration;
  /**
   * Decides whether an outcome is retried. Defaults to every error except an abort of the
   * caller's signal; successful values are not retried.
   */
  shouldHandle?: (args: RetryPredicateArguments) => boolean | PromiseLike<boolean>;
  /** Overrides the computed delay; return `undefined` to keep it. */
  delayGenerator?: (
    args: RetryDelayGeneratorArguments,
  ) => Duration | undefined | PromiseLike<Duration | undefined>;
  /** Called before each retry's delay. */
  onRetry?: (args: OnRetryArguments) => void | PromiseLike<void>;
  /** Source of randomness for jitter, returning [0, 1). Defaults to `Math.random`. */
  randomizer?: () => number;
}
