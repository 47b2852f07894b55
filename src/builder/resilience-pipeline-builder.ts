import type { Duration } from '../pipeline/duration.ts';
import { PipelineBuilder } from '../pipeline/pipeline-builder.ts';
import type { StrategyFactory } from '../pipeline/strategy.ts';
import type {
  ChaosBehaviorStrategyOptions,
  ChaosFaultStrategyOptions,
  ChaosLatencyStrategyOptions,
  ChaosOutcomeStrategyOptions,
} from '../strategies/chaos/options.ts';
import {
  chaosBehaviorStrategy,
  chaosFaultStrategy,
  chaosLatencyStrategy,
  chaosOutcomeStrategy,
} from '../strategies/chaos/strategy.ts';
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

  /**
   * Adds a chaos fault: a share (`injectionRate`, default 0.001) of executions fail with `fault`
   * instead of running the rest of the pipeline. `addChaosFault(0.1, error)` is short for
   * `addChaosFault({ injectionRate: 0.1, fault: error })`, and with a function for `faultGenerator`,
   * as Polly's `AddChaosFault(injectionRate, ...)`. Add it last (innermost). See `chaosFaultStrategy`.
   *
   * @example
   * builder.addRetry().addChaosFault({ injectionRate: 0.1, fault: new Error('injected by chaos') })
   */
  addChaosFault(options: ChaosFaultStrategyOptions): ResiliencePipelineBuilder<E>;
  addChaosFault(
    injectionRate: number,
    fault: Error | NonNullable<ChaosFaultStrategyOptions['faultGenerator']>,
  ): ResiliencePipelineBuilder<E>;
  addChaosFault(
    options: ChaosFaultStrategyOptions | number,
    fault?: Error | ChaosFaultStrategyOptions['faultGenerator'],
  ): ResiliencePipelineBuilder<E> {
    return this.add(
      chaosFaultStrategy(
        typeof options === 'number'
          ? typeof fault === 'function'
            ? { injectionRate: options, faultGenerator: fault }
            : { injectionRate: options, fault }
          : options,
      ),
    );
  }

  /**
   * Adds a chaos latency: a share (`injectionRate`, default 0.001) of executions wait `latency`
   * (default 30 s) before the rest of the pipeline runs. `addChaosLatency(0.1, '5s')` is short for
   * `addChaosLatency({ injectionRate: 0.1, latency: '5s' })`. See `chaosLatencyStrategy`.
   *
   * @example
   * builder.addTimeout('2s').addChaosLatency({ injectionRate: 0.05, latency: '5s' })
   */
  addChaosLatency(options?: ChaosLatencyStrategyOptions): ResiliencePipelineBuilder<E>;
  addChaosLatency(injectionRate: number, latency: Duration): ResiliencePipelineBuilder<E>;
  addChaosLatency(
    options?: ChaosLatencyStrategyOptions | number,
    latency?: Duration,
  ): ResiliencePipelineBuilder<E> {
    return this.add(
      chaosLatencyStrategy(typeof options === 'number' ? { injectionRate: options, latency } : options),
    );
  }

  /**
   * Adds a chaos outcome: a share (`injectionRate`, default 0.001) of executions return
   * `outcomeGenerator`'s value (or fail with what it throws) instead of running the rest of the
   * pipeline. `addChaosOutcome(0.1, generator)` is short for
   * `addChaosOutcome({ injectionRate: 0.1, outcomeGenerator: generator })`. See `chaosOutcomeStrategy`.
   *
   * @example
   * builder.addChaosOutcome({ injectionRate: 0.1, outcomeGenerator: () => ({ status: 503 }) })
   */
  addChaosOutcome<R>(options: ChaosOutcomeStrategyOptions<R>): ResiliencePipelineBuilder<E>;
  addChaosOutcome<R>(
    injectionRate: number,
    outcomeGenerator: ChaosOutcomeStrategyOptions<R>['outcomeGenerator'],
  ): ResiliencePipelineBuilder<E>;
  addChaosOutcome<R>(
    options: ChaosOutcomeStrategyOptions<R> | number,
    outcomeGenerator?: ChaosOutcomeStrategyOptions<R>['outcomeGenerator'],
  ): ResiliencePipelineBuilder<E> {
    return this.add(
      chaosOutcomeStrategy(
        typeof options === 'number'
          ? { injectionRate: options, outcomeGenerator: outcomeGenerator! }
          : options,
      ),
    );
  }

  /**
   * Adds a chaos behavior: a share (`injectionRate`, default 0.001) of executions first run
   * `behaviorGenerator` (a side effect), then the rest of the pipeline. `addChaosBehavior(0.01, fn)`
   * is short for `addChaosBehavior({ injectionRate: 0.01, behaviorGenerator: fn })`. See
   * `chaosBehaviorStrategy`.
   *
   * @example
   * builder.addChaosBehavior({ injectionRate: 0.01, behaviorGenerator: () => cache.clear() })
   */
  addChaosBehavior(options: ChaosBehaviorStrategyOptions): ResiliencePipelineBuilder<E>;
  addChaosBehavior(
    injectionRate: number,
    behaviorGenerator: ChaosBehaviorStrategyOptions['behaviorGenerator'],
  ): ResiliencePipelineBuilder<E>;
  addChaosBehavior(
    options: ChaosBehaviorStrategyOptions | number,
    behaviorGenerator?: ChaosBehaviorStrategyOptions['behaviorGenerator'],
  ): ResiliencePipelineBuilder<E> {
    return this.add(
      chaosBehaviorStrategy(
        typeof options === 'number'
          ? { injectionRate: options, behaviorGenerator: behaviorGenerator! }
          : options,
      ),
    );
  }
}
