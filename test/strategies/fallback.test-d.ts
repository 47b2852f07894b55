import {
  type BrokenCircuitError,
  type FallbackStrategyOptions,
  fallbackStrategy,
  type IsolatedCircuitError,
  type Outcome,
  type ResiliencePipeline,
  ResiliencePipelineBuilder,
  type StrategyFactory,
} from 'resil';
import { describe, expectTypeOf, it } from 'vitest';

describe('fallback types', () => {
  it('raises no error of its own: the pipeline type is unchanged', () => {
    const pipeline = new ResiliencePipelineBuilder()
      .addFallback({ fallbackAction: () => [] as string[] })
      .addCircuitBreaker()
      .build();
    expectTypeOf(pipeline).toEqualTypeOf<ResiliencePipeline<BrokenCircuitError | IsolatedCircuitError>>();
    expectTypeOf(fallbackStrategy({ fallbackAction: () => 1 })).toEqualTypeOf<StrategyFactory<never>>();
  });

  it('infers the fallback value type from fallbackAction, sync or async', () => {
    const options = { fallbackAction: async () => 'cached' } satisfies FallbackStrategyOptions<string>;
    expectTypeOf(options.fallbackAction).returns.resolves.toEqualTypeOf<string>();
    // @ts-expect-error the declared value type is string
    const wrong: FallbackStrategyOptions<string> = { fallbackAction: () => 42 };
    void wrong;
  });

  it('types the outcome with the inner errors you declare', () => {
    new ResiliencePipelineBuilder().addFallback<string, BrokenCircuitError>({
      fallbackAction: ({ outcome }) => {
        expectTypeOf(outcome).toEqualTypeOf<Outcome<unknown, BrokenCircuitError>>();
        return outcome.match({
          ok: () => 'ok',
          CIRCUIT_OPEN: (error) => `retry in ${error.retryAfter}`,
          error: () => 'other',
        });
      },
    });
    new ResiliencePipelineBuilder().addFallback({
      fallbackAction: ({ outcome }) => {
        // Without a declaration, only ok / error handlers.
        // @ts-expect-error no inner errors declared
        outcome.match({ ok: () => 1, error: () => 2, CIRCUIT_OPEN: () => 3 });
        return 0;
      },
    });
  });

  it('requires fallbackAction', () => {
    // @ts-expect-error fallbackAction is required
    new ResiliencePipelineBuilder().addFallback({ onFallback: () => {} });
  });
});
