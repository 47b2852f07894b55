import {
  type BrokenCircuitError,
  type ConcurrencyLimiterRejectedError,
  circuitBreakerStrategy,
  concurrencyLimiterStrategy,
  type ErrorCode,
  hedgingStrategy,
  type IsolatedCircuitError,
  type LockLostError,
  type LockNotAcquiredError,
  lockStrategy,
  type Outcome,
  PipelineBuilder,
  type RateLimiterRejectedError,
  type ResiliencePipeline,
  ResiliencePipelineBuilder,
  rateLimiterStrategy,
  retryStrategy,
  type StoreUnavailableError,
  type StrategyFactory,
  type TimeoutRejectedError,
  timeoutStrategy,
} from 'resil';
import { describe, expectTypeOf, it } from 'vitest';

type PipelineErrors =
  | LockNotAcquiredError
  | LockLostError
  | StoreUnavailableError
  | BrokenCircuitError
  | IsolatedCircuitError
  | TimeoutRejectedError
  | RateLimiterRejectedError
  | ConcurrencyLimiterRejectedError;

const shortcuts = new ResiliencePipelineBuilder()
  .addLock({ key: () => 'nightly-report' })
  .addCircuitBreaker()
  .addTimeout('10s')
  .addRetry()
  .addHedging()
  .addRateLimiter({ tokenLimit: 10 })
  .addConcurrencyLimiter({ permitLimit: 4 })
  .build();

const factories = new PipelineBuilder()
  .add(lockStrategy({ key: () => 'nightly-report' }))
  .add(circuitBreakerStrategy())
  .add(timeoutStrategy('10s'))
  .add(retryStrategy())
  .add(hedgingStrategy())
  .add(rateLimiterStrategy({ permitLimit: 100, window: '1m' }))
  .add(concurrencyLimiterStrategy(4))
  .build();

describe('pipeline error types', () => {
  it('each strategy factory declares the errors it raises (retry and hedging raise none of their own)', () => {
    expectTypeOf(retryStrategy()).toEqualTypeOf<StrategyFactory<never>>();
    expectTypeOf(hedgingStrategy()).toEqualTypeOf<StrategyFactory<never>>();
    expectTypeOf(rateLimiterStrategy({ tokenLimit: 1 })).toEqualTypeOf<
      StrategyFactory<RateLimiterRejectedError>
    >();
    expectTypeOf(concurrencyLimiterStrategy()).toEqualTypeOf<
      StrategyFactory<ConcurrencyLimiterRejectedError>
    >();
  });

  it('both builders track the union of every strategy error', () => {
    expectTypeOf(shortcuts).toEqualTypeOf<ResiliencePipeline<PipelineErrors>>();
    expectTypeOf(factories).toEqualTypeOf<ResiliencePipeline<PipelineErrors>>();
    expectTypeOf<ErrorCode<PipelineErrors>>().toEqualTypeOf<
      | 'LOCK_NOT_ACQUIRED'
      | 'LOCK_LOST'
      | 'STORE_UNAVAILABLE'
      | 'CIRCUIT_OPEN'
      | 'CIRCUIT_ISOLATED'
      | 'TIMEOUT'
      | 'RATE_LIMITED'
      | 'CONCURRENCY_LIMITED'
    >();
  });

  it('settle() + match() hand every error to its own typed handler', async () => {
    for (const pipeline of [shortcuts, factories]) {
      const outcome = await pipeline.settle(async () => 42);
      expectTypeOf(outcome).toEqualTypeOf<Outcome<number, PipelineErrors>>();
      const message = outcome.match({
        ok: (value) => {
          expectTypeOf(value).toEqualTypeOf<number>();
          return `ok ${value}`;
        },
        LOCK_NOT_ACQUIRED: (error) => {
          expectTypeOf(error).toEqualTypeOf<LockNotAcquiredError>();
          return `skipped, ${error.key} is held`;
        },
        LOCK_LOST: (error) => {
          expectTypeOf(error).toEqualTypeOf<LockLostError>();
          return `lost ${error.key}`;
        },
        STORE_UNAVAILABLE: (error) => {
          expectTypeOf(error).toEqualTypeOf<StoreUnavailableError>();
          return 'store down';
        },
        CIRCUIT_OPEN: (error) => {
          expectTypeOf(error).toEqualTypeOf<BrokenCircuitError>();
          return 'circuit open';
        },
        CIRCUIT_ISOLATED: (error) => {
          expectTypeOf(error).toEqualTypeOf<IsolatedCircuitError>();
          return 'circuit isolated';
        },
        TIMEOUT: (error) => {
          expectTypeOf(error).toEqualTypeOf<TimeoutRejectedError>();
          expectTypeOf(error.timeout).toEqualTypeOf<number>();
          return 'timed out';
        },
        RATE_LIMITED: (error) => {
          expectTypeOf(error).toEqualTypeOf<RateLimiterRejectedError>();
          expectTypeOf(error.retryAfter).toEqualTypeOf<number | undefined>();
          return 'rate limited';
        },
        CONCURRENCY_LIMITED: (error) => {
          expectTypeOf(error).toEqualTypeOf<ConcurrencyLimiterRejectedError>();
          expectTypeOf(error.permitLimit).toEqualTypeOf<number>();
          return 'too busy';
        },
        error: (error) => {
          expectTypeOf(error).toEqualTypeOf<unknown>();
          return 'callback failed';
        },
      });
      expectTypeOf(message).toEqualTypeOf<string>();
    }
  });

  it('a handler for a code the pipeline cannot raise does not compile', async () => {
    const limited = new ResiliencePipelineBuilder().addRetry().addRateLimiter({ tokenLimit: 1 }).build();
    const outcome = await limited.settle(() => 1);
    outcome.match({ ok: () => 0, error: () => 1, RATE_LIMITED: () => 2 });
    // @ts-expect-error no timeout strategy in this pipeline
    outcome.match({ ok: () => 0, error: () => 1, TIMEOUT: () => 2 });
  });
});
