import type { LockStrategyOptions } from '../strategies/lock/options.ts';
import { type LockStrategyError, lockStrategy } from '../strategies/lock/strategy.ts';
import type { RetryStrategyOptions } from '../strategies/retry/options.ts';
import { retryStrategy } from '../strategies/retry/strategy.ts';
import type { TimeoutRejectedError } from '../strategies/timeout/errors.ts';
import type { TimeoutStrategyOptions } from '../strategies/timeout/options.ts';
import { timeoutStrategy } from '../strategies/timeout/strategy.ts';
import type { Duration } from './duration.ts';
import { PipelineBuilder } from './pipeline-builder.ts';
import type { StrategyFactory } from './strategy.ts';

/**
 * `PipelineBuilder` with a Polly-style shortcut per strategy: `addRetry()`, `addTimeout()`, ...
 * Convenient, but it bundles every strategy; for the smallest bundle use `PipelineBuilder` with
 * the factories. Strategies run in the order added (first = outermost).
 *
 * @example
 * const pipeline = new ResiliencePipelineBuilder()
 *   .addTimeout('10s')
 *   .addRetry({ maxRetryAttempts: 3, delay: '200ms', backoffType: 'exponential' })
 *   .build();
 */
export class ResiliencePipelineBuilder<E = never> extends PipelineBuilder<E> {
  override add<F>(factory: StrategyFactory<F>): ResiliencePipelineBuilder<E | F> {
    super.add(factory);
    return this as ResiliencePipelineBuilder<E | F>;
  }

  /**
   * Adds a lock: the rest of the pipeline runs only while holding a renewed lease on
   * `key(context)` (ttl 30 s, wait 0 by default). See `lockStrategy`.
   *
   * @example
   * builder.addLock({ key: () => 'nightly-report', ttl: '30s', wait: '5s', store })
   */
  addLock(options: LockStrategyOptions): ResiliencePipelineBuilder<E | LockStrategyError> {
    return this.add(lockStrategy(options));
  }

  /** Adds a retry strategy (Polly v8 defaults: 3 retries, 2 s constant delay). */
  addRetry(options?: RetryStrategyOptions): ResiliencePipelineBuilder<E> {
    return this.add(retryStrategy(options));
  }

  /** Adds a timeout strategy: a duration, or options (default 30 s). */
  addTimeout(
    options: TimeoutStrategyOptions | Duration,
  ): ResiliencePipelineBuilder<E | TimeoutRejectedError> {
    return this.add(timeoutStrategy(options));
  }
}
