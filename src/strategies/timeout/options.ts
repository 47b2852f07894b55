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

export interface TimeoutStrategyOptions {
  /** How long the callback may run before its signal is aborted. Defaults to 30 s. From 10 ms to 1 day. */
  timeout?: Duration;
  /**
   * Chooses the timeout per execution; a result of 0, a negative number or `Infinity` means
   * no timeout for that execution.
   */
  timeoutGenerator?: (args: TimeoutGeneratorArguments) => Duration | PromiseLike<Duration>;
  /** Called when an execution ends because the timeout elapsed. */
  onTimeout?: (args: OnTimeoutArguments) => void | PromiseLike<void>;
}
