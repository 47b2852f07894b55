import type { ResilienceContext } from '../../pipeline/context.ts';

export interface OnConcurrencyLimiterRejectedArguments {
  readonly context: ResilienceContext;
}

export interface ConcurrencyLimiterStrategyOptions {
  /** Executions that may run at the same time. Defaults to 1000. A whole number >= 1. */
  permitLimit?: number;
  /**
   * Executions that may wait (first in, first out) for a running one to finish; beyond that they
   * are rejected. Defaults to 0: reject as soon as `permitLimit` executions run. A whole number >= 0.
   */
  queueLimit?: number;
  /**
   * Called when an execution is rejected, before the rejection is returned. If it throws, the
   * execution fails with its error instead.
   */
  onRejected?: (args: OnConcurrencyLimiterRejectedArguments) => void | PromiseLike<void>;
}
