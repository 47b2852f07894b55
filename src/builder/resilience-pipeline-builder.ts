import type { Duration } from '../pipeline/duration.ts';
import { PipelineBuilder } from '../pipeline/pipeline-builder.ts';
import type { StrategyFactory } from '../pipeline/strategy.ts';
import type { BrokenCircuitError, IsolatedCircuitError } from '../strategies/circuit-breaker/errors.ts';
import type { CircuitBreakerStrategyOptions } from '../strategies/circuit-breaker/options.ts';
import { circuitBreakerStrategy } from '../strategies/circuit-breaker/strategy.ts';
import type { ConcurrencyLimiterRejectedError } from '../strategies/concurrency-limiter/errors.ts';
import type { ConcurrencyLimiterStrategyOptions } from '../strategies/concurrency-limiter/options.ts';
import { concurrencyLimiterStrategy } from '../strategies/concurrency-limiter/strategy.ts';
import type { FallbackStrategyOptions } from '../strategies/fallback/options.ts';
import { fallbackStrategy } from '../strategies/fallback/strategy.ts';
import type { HedgingStrategyOptions } from '../strategies/hedging/options.ts';
import { hedgingStrategy } from '../strategies/hedging/strategy.ts';
import type { LockStrategyOptions } from '../strategies/lock/options.ts';
import { type LockStrategyError, lockStrategy } from '../strategies/lock/strategy.ts';
import type { RateLimiterRejectedError } from '../strategies/rate-limiter/errors.ts';
import type { RateLimiterStrategyOptions } from '../strategies/rate-limiter/options.ts';
import { rateLimiterStrategy } from '../strategies/rate-limiter/strategy.ts';
import type { RetryStrategyOptions } from '../strategies/retry/options.ts';
import { retryStrategy } from '../strategies/retry/strategy.ts';
import type { TimeoutRejectedError } from '../strategies/timeout/errors.ts';
import type { TimeoutStrategyOptions } from '../strategies/timeout/options.ts';
import { timeoutStrategy } from '../strategies/timeout/strategy.ts';

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

  /**
   * Adds a circuit breaker (Polly v8 defaults: breaks when 10% of at least 100 executions in 30 s
   * failed, for 5 s). See `circuitBreakerStrategy`.
   *
   * @example
   * builder.addCircuitBreaker({ failureRatio: 0.5, minimumThroughput: 20, breakDuration: '30s' })
   */
  addCircuitBreaker(
    options?: CircuitBreakerStrategyOptions,
  ): ResiliencePipelineBuilder<E | BrokenCircuitError | IsolatedCircuitError> {
    return this.add(circuitBreakerStrategy(options));
  }

  /**
   * Adds a fallback: a handled failure of the rest of the pipeline is replaced by
   * `fallbackAction`'s value. See `fallbackStrategy`.
   *
   * @example
   * builder.addFallback({ fallbackAction: () => [] })
   */
  addFallback<R, F = never>(options: FallbackStrategyOptions<R, F>): ResiliencePipelineBuilder<E> {
    return this.add(fallbackStrategy(options));
  }

  /**
   * Adds a concurrency limiter (bulkhead): at most `permitLimit` executions at once (default 1000),
   * `queueLimit` more waiting (default 0). A bare number is `permitLimit`, as in Polly's
   * `AddConcurrencyLimiter(permitLimit, queueLimit)`. See `concurrencyLimiterStrategy`.
   *
   * @example
   * builder.addConcurrencyLimiter({ permitLimit: 10, queueLimit: 100 })
   */
  addConcurrencyLimiter(
    options?: ConcurrencyLimiterStrategyOptions | number,
  ): ResiliencePipelineBuilder<E | ConcurrencyLimiterRejectedError> {
    return this.add(concurrencyLimiterStrategy(options));
  }

  /**
   * Adds hedging (Polly v8 defaults: 1 hedged attempt after 2 s): the first acceptable outcome
   * of the primary and hedged attempts wins. See `hedgingStrategy`.
   *
   * @example
   * builder.addHedging({ maxHedgedAttempts: 2, delay: '100ms' })
   */
  addHedging(options?: HedgingStrategyOptions): ResiliencePipelineBuilder<E> {
    return this.add(hedgingStrategy(options));
  }

  /**
   * Adds a rate limiter: a token bucket (`tokenLimit`, `tokensPerPeriod`, `replenishmentPeriod`),
   * a sliding window (`permitLimit`, `window`, `segmentsPerWindow`) or a shared `limiter`, with a
   * `queueLimit` (default 0). See `rateLimiterStrategy`.
   *
   * @example
   * builder.addRateLimiter({ tokenLimit: 10, tokensPerPeriod: 5, replenishmentPeriod: '1s' })
   */
  addRateLimiter(
    options: RateLimiterStrategyOptions,
  ): ResiliencePipelineBuilder<E | RateLimiterRejectedError> {
    return this.add(rateLimiterStrategy(options));
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
