import {
  type BrokenCircuitError,
  CircuitBreakerStateProvider,
  type CircuitState,
  circuitBreakerStrategy,
  type IsolatedCircuitError,
  isBrokenCircuitError,
  type OnCircuitOpenedArguments,
  type Outcome,
  PipelineBuilder,
  type ResiliencePipeline,
  ResiliencePipelineBuilder,
  type StrategyFactory,
  type TimeoutRejectedError,
} from 'resil';
import { describe, expectTypeOf, it } from 'vitest';

describe('circuit breaker types', () => {
  it('adds its two errors to the pipeline type', () => {
    const pipeline = new ResiliencePipelineBuilder().addCircuitBreaker().build();
    expectTypeOf(pipeline).toEqualTypeOf<ResiliencePipeline<BrokenCircuitError | IsolatedCircuitError>>();
    expectTypeOf(circuitBreakerStrategy()).toEqualTypeOf<
      StrategyFactory<BrokenCircuitError | IsolatedCircuitError>
    >();
    const composed = new PipelineBuilder().add(circuitBreakerStrategy()).build();
    expectTypeOf(composed).toEqualTypeOf<ResiliencePipeline<BrokenCircuitError | IsolatedCircuitError>>();
  });

  it('joins the errors of the other strategies', () => {
    const pipeline = new ResiliencePipelineBuilder().addTimeout(1_000).addCircuitBreaker().build();
    expectTypeOf(pipeline).toEqualTypeOf<
      ResiliencePipeline<TimeoutRejectedError | BrokenCircuitError | IsolatedCircuitError>
    >();
  });

  it('lets match() handle each error by code, typed', async () => {
    const pipeline = new ResiliencePipelineBuilder().addTimeout(1_000).addCircuitBreaker().build();
    const outcome = await pipeline.settle(() => 42);
    expectTypeOf(outcome).toEqualTypeOf<
      Outcome<number, TimeoutRejectedError | BrokenCircuitError | IsolatedCircuitError>
    >();
    const text = outcome.match({
      ok: (value) => {
        expectTypeOf(value).toEqualTypeOf<number>();
        return 'ok';
      },
      CIRCUIT_OPEN: (error) => {
        expectTypeOf(error).toEqualTypeOf<BrokenCircuitError>();
        expectTypeOf(error.retryAfter).toEqualTypeOf<number>();
        return 'open';
      },
      CIRCUIT_ISOLATED: (error) => {
        expectTypeOf(error).toEqualTypeOf<IsolatedCircuitError>();
        return 'isolated';
      },
      TIMEOUT: (error) => {
        expectTypeOf(error).toEqualTypeOf<TimeoutRejectedError>();
        return 'timeout';
      },
      error: (error) => {
        expectTypeOf(error).toBeUnknown();
        return 'other';
      },
    });
    expectTypeOf(text).toEqualTypeOf<string>();
    // A code the pipeline cannot raise is refused.
    // @ts-expect-error RATE_LIMITED is not one of this pipeline's errors
    outcome.match({ ok: () => 1, error: () => 2, RATE_LIMITED: () => 3 });
  });

  it('types options, events and the state', () => {
    new ResiliencePipelineBuilder().addCircuitBreaker({
      failureRatio: 0.5,
      samplingDuration: '10s',
      breakDuration: 5_000,
      breakDurationGenerator: ({ halfOpenAttempts, failureRate, failureCount }) => {
        expectTypeOf(halfOpenAttempts).toEqualTypeOf<number>();
        expectTypeOf(failureRate).toEqualTypeOf<number>();
        expectTypeOf(failureCount).toEqualTypeOf<number>();
        return '1s';
      },
      onOpened: (args) => {
        expectTypeOf(args).toEqualTypeOf<OnCircuitOpenedArguments>();
        expectTypeOf(args.breakDuration).toEqualTypeOf<number>();
        expectTypeOf(args.isManual).toEqualTypeOf<boolean>();
      },
      shouldHandle: async ({ outcome }) => !outcome.ok,
    });
    // @ts-expect-error durations are numbers or unit strings
    new ResiliencePipelineBuilder().addCircuitBreaker({ breakDuration: '5 seconds' });
    expectTypeOf(new CircuitBreakerStateProvider().circuitState).toEqualTypeOf<CircuitState>();
    expectTypeOf<CircuitState>().toEqualTypeOf<'closed' | 'open' | 'half-open' | 'isolated'>();
    const error: unknown = undefined;
    if (isBrokenCircuitError(error)) expectTypeOf(error.retryAfter).toEqualTypeOf<number>();
  });
});
