import type { ResilienceContext } from '../../pipeline/context.ts';
import type { Duration } from '../../pipeline/duration.ts';

export interface TimeoutGeneratorArguments {
  readonly context: ResilienceContext;
}

export interface OnTimeoutArguments {
  readonly context: ResilienceContext;
  /** The timeout that elapsed, in milliseconds. */
  readonly timeout: number;
}

/**
 * Options of the timeout strategy (Polly v8's, camelCased). `addTimeout(5_000)` or
 * `addTimeout('5s')` is short for `addTimeout({ timeout: 5_000 })`.
 *
 * @example
 * timeoutStrategy({ timeout: '10s', onTimeout: ({ timeout }) => log.warn({ timeout }, 'timed out') })
 */
export interface TimeoutStrategyOptions {
  /** How long the callback may run before its signal is aborted. From 10 ms to 1 day. Defaults to 30 s. */
  timeout?: Duration;
  /**
   * Chooses the timeout per execution, overriding `timeout`; a result of 0, a negative number or
   * `Infinity` means no timeout for that execution. Defaults to none.
   */
  timeoutGenerator?: (args: TimeoutGeneratorArguments) => Duration | PromiseLike<Duration>;
  /** Called when an execution fails because the timeout elapsed. Defaults to none. */
  onTimeout?: (args: OnTimeoutArguments) => void | PromiseLike<void>;
}
