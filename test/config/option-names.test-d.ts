import { describe, expectTypeOf, it } from 'vitest';
import type {
  JobChaosOptions,
  JobDefinition,
  JobLockOptions,
  ResilConfig,
  SchedulerTelemetry,
} from '../../src/scheduler/job.ts';
import type {
  chaosKinds,
  chaosOptions,
  configOptions,
  jobOptions,
  lockOptions,
  retryOptions,
  telemetryMembers,
} from '../../src/scheduler/option-names.ts';
import type {
  ChaosBehaviorStrategyOptions,
  ChaosFaultStrategyOptions,
  ChaosLatencyStrategyOptions,
  ChaosOutcomeStrategyOptions,
} from '../../src/strategies/chaos/options.ts';
import type { RetryStrategyOptions } from '../../src/strategies/retry/options.ts';

// The config accepts exactly the options its types declare: a name added to a type and not to
// the list (or the other way round) fails here, and in resolve.ts itself.
describe('the allowed option names of a config', () => {
  it('are the keys of the option types', () => {
    expectTypeOf<(typeof configOptions)[number]>().toEqualTypeOf<keyof ResilConfig>();
    expectTypeOf<(typeof jobOptions)[number]>().toEqualTypeOf<keyof JobDefinition>();
    expectTypeOf<(typeof lockOptions)[number]>().toEqualTypeOf<keyof JobLockOptions>();
    expectTypeOf<(typeof retryOptions)[number]>().toEqualTypeOf<keyof RetryStrategyOptions>();
    expectTypeOf<(typeof telemetryMembers)[number]>().toEqualTypeOf<keyof SchedulerTelemetry>();
    expectTypeOf<(typeof chaosKinds)[number]>().toEqualTypeOf<keyof JobChaosOptions>();
    expectTypeOf<(typeof chaosOptions.fault)[number]>().toEqualTypeOf<keyof ChaosFaultStrategyOptions>();
    expectTypeOf<(typeof chaosOptions.latency)[number]>().toEqualTypeOf<keyof ChaosLatencyStrategyOptions>();
    expectTypeOf<(typeof chaosOptions.outcome)[number]>().toEqualTypeOf<keyof ChaosOutcomeStrategyOptions>();
    expectTypeOf<(typeof chaosOptions.behavior)[number]>().toEqualTypeOf<
      keyof ChaosBehaviorStrategyOptions
    >();
  });
});
