import {
  type ChaosOutcomeStrategyOptions,
  chaosFaultStrategy,
  chaosOutcomeStrategy,
  type ResiliencePipeline,
  ResiliencePipelineBuilder,
  type StrategyFactory,
  type TimeoutRejectedError,
} from 'resil';
import { describe, expectTypeOf, it } from 'vitest';

describe('chaos types', () => {
  it('raise no error of their own: the pipeline type is unchanged', () => {
    const pipeline = new ResiliencePipelineBuilder()
      .addTimeout('1s')
      .addChaosLatency(0.1, '5s')
      .addChaosFault(0.1, new Error('chaos'))
      .addChaosOutcome(0.1, () => 'value')
      .addChaosBehavior(0.1, () => {})
      .build();
    expectTypeOf(pipeline).toEqualTypeOf<ResiliencePipeline<TimeoutRejectedError>>();
    expectTypeOf(chaosFaultStrategy({ fault: new Error('chaos') })).toEqualTypeOf<StrategyFactory<never>>();
  });

  it('take the options object or, as in Polly, the rate and the fault, latency or generator', () => {
    const builder = new ResiliencePipelineBuilder();
    builder.addChaosFault({ injectionRate: 0.1, faultGenerator: async () => undefined });
    builder.addChaosFault(0.1, () => new Error('chaos'));
    builder.addChaosLatency();
    builder.addChaosLatency({ latency: '5s', latencyGenerator: () => 100 });
    // @ts-expect-error a fault is an Error
    builder.addChaosFault(0.1, 'boom');
    // @ts-expect-error the rate needs its fault
    builder.addChaosFault(0.1);
    // @ts-expect-error a latency is a Duration
    builder.addChaosLatency(0.1, 'soon');
    // @ts-expect-error outcomeGenerator is required
    builder.addChaosOutcome({ injectionRate: 0.1 });
    // @ts-expect-error behaviorGenerator is required
    builder.addChaosBehavior({ injectionRate: 0.1 });
  });

  it("infers the outcome's value type from outcomeGenerator, sync or async", () => {
    const options = {
      outcomeGenerator: async () => ({ status: 503 }),
    } satisfies ChaosOutcomeStrategyOptions<{
      status: number;
    }>;
    expectTypeOf(options.outcomeGenerator).returns.resolves.toEqualTypeOf<{ status: number }>();
    expectTypeOf(chaosOutcomeStrategy(options)).toEqualTypeOf<StrategyFactory<never>>();
    // @ts-expect-error the declared value type is string
    const wrong: ChaosOutcomeStrategyOptions<string> = { outcomeGenerator: () => 42 };
    void wrong;
  });
});
