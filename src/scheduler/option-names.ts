import type {
  ChaosBehaviorStrategyOptions,
  ChaosFaultStrategyOptions,
  ChaosLatencyStrategyOptions,
  ChaosOutcomeStrategyOptions,
  ChaosStrategyOptions,
} from '../strategies/chaos/options.ts';
import type { RetryStrategyOptions } from '../strategies/retry/options.ts';
import type {
  DstPolicy,
  JobChaosOptions,
  JobDefinition,
  JobIsolation,
  JobLockOptions,
  JobResourceLimits,
  ResilConfig,
  SchedulerTelemetry,
} from './job.ts';

/**
 * `names`, checked against the type: a key of `T` missing from the list, or a name `T` lacks, is a
 * compile error, so the lists of allowed option names cannot drift from the option types.
 */
function optionNames<T>() {
  return <const L extends readonly (keyof T & string)[]>(
    names: L &
      ([Exclude<keyof T, L[number]>] extends [never] ? unknown : { missing: Exclude<keyof T, L[number]> }),
  ): L => names;
}

export const hookOptions = ['onSuccess', 'onFailure', 'onSkip'] as const;
export const configOptions = optionNames<ResilConfig>()([
  'store',
  'timezone',
  'instance',
  'shutdownGrace',
  'ledgerRetention',
  'ledgerRecordLimit',
  'isolation',
  ...hookOptions,
  'telemetry',
  'jobs',
]);
export const jobOptions = optionNames<JobDefinition>()([
  'name',
  'schedule',
  'run',
  'timezone',
  'lock',
  'timeout',
  'retry',
  'chaos',
  'enabled',
  'catchUp',
  'startingDeadline',
  'overlap',
  'concurrency',
  'jitter',
  'isolation',
  'dst',
  'resourceLimits',
  ...hookOptions,
]);
export const lockOptions = optionNames<JobLockOptions>()(['key', 'ttl', 'wait']);
export const resourceLimitOptions = optionNames<JobResourceLimits>()([
  'maxOldGenerationSizeMb',
  'maxYoungGenerationSizeMb',
  'codeRangeSizeMb',
  'stackSizeMb',
]);
export const isolations: readonly JobIsolation[] = ['none', 'worker'];
export const dstPolicies: readonly DstPolicy[] = ['shift', 'skip'];
export const retryOptions = optionNames<RetryStrategyOptions>()([
  'maxRetryAttempts',
  'delay',
  'backoffType',
  'useJitter',
  'maxDelay',
  'shouldHandle',
  'delayGenerator',
  'onRetry',
  'randomizer',
]);

/** A job's `chaos` keys: in the order their strategies run, outermost first. */
export const chaosKinds = optionNames<JobChaosOptions>()(['latency', 'fault', 'outcome', 'behavior']);
const commonChaosOptions = optionNames<ChaosStrategyOptions>()([
  'injectionRate',
  'injectionRateGenerator',
  'enabled',
  'enabledGenerator',
  'randomizer',
]);
/** The options of each chaos strategy, by its key in a job's `chaos`. */
export const chaosOptions = {
  fault: optionNames<ChaosFaultStrategyOptions>()([
    ...commonChaosOptions,
    'fault',
    'faultGenerator',
    'onFaultInjected',
  ]),
  latency: optionNames<ChaosLatencyStrategyOptions>()([
    ...commonChaosOptions,
    'latency',
    'latencyGenerator',
    'onLatencyInjected',
  ]),
  outcome: optionNames<ChaosOutcomeStrategyOptions>()([
    ...commonChaosOptions,
    'outcomeGenerator',
    'onOutcomeInjected',
  ]),
  behavior: optionNames<ChaosBehaviorStrategyOptions>()([
    ...commonChaosOptions,
    'behaviorGenerator',
    'onBehaviorInjected',
  ]),
} as const;

export const telemetryMembers = optionNames<SchedulerTelemetry>()([
  'pipelineListener',
  'onSchedulerEvent',
  'flush',
]);
