import { isInvalidOptionError } from '../pipeline/errors.ts';
import type { ResiliencePipeline } from '../pipeline/pipeline.ts';
import { PipelineBuilder, type PipelineBuilderOptions } from '../pipeline/pipeline-builder.ts';
import type { StrategyFactory } from '../pipeline/strategy.ts';
import { systemTimeProvider } from '../pipeline/time.ts';
import {
  chaosBehaviorStrategy,
  chaosFaultStrategy,
  chaosLatencyStrategy,
  chaosOutcomeStrategy,
} from '../strategies/chaos/strategy.ts';
import { got } from './config-error.ts';
import type { JobChaosOptions } from './job.ts';
import { checkUnknownOptions, isPlainObject, type Report } from './option-checks.ts';
import { chaosKinds, chaosOptions } from './option-names.ts';

type ChaosKind = (typeof chaosKinds)[number];

const factories: { [K in ChaosKind]: (options: NonNullable<JobChaosOptions[K]>) => StrategyFactory<never> } =
  {
    latency: chaosLatencyStrategy,
    fault: chaosFaultStrategy,
    outcome: chaosOutcomeStrategy,
    behavior: chaosBehaviorStrategy,
  };

/** The strategy's own prefix of each kind's option names (`chaosFault.injectionRate`). */
const strategyPrefixes: Record<ChaosKind, string> = {
  latency: 'chaosLatency',
  fault: 'chaosFault',
  outcome: 'chaosOutcome',
  behavior: 'chaosBehavior',
};

/**
 * What each kind requires, so that one option can be checked alone: the strategies stop at their
 * first bad option, and every bad one is worth telling at once.
 */
const placeholders: Record<ChaosKind, Record<string, unknown>> = {
  latency: {},
  fault: { fault: new Error('placeholder') },
  outcome: { outcomeGenerator: () => undefined },
  behavior: { behaviorGenerator: () => {} },
};

const noTelemetry = { timeProvider: systemTimeProvider, report: () => {} };

/** True when the `kind` strategy accepts `options`; else reports the option it refused, as `chaos.<kind>.<option>`. */
function acceptedBy(kind: ChaosKind, options: Record<string, unknown>, report: Report): boolean {
  try {
    (factories[kind] as (options: unknown) => StrategyFactory<never>)(options).create(noTelemetry);
    return true;
  } catch (error) {
    if (!isInvalidOptionError(error)) throw error;
    const option = error.option.startsWith(strategyPrefixes[kind])
      ? `chaos.${kind}${error.option.slice(strategyPrefixes[kind].length)}`
      : error.option;
    report({ option, value: error.value, message: `expected ${error.expected}, ${got(error.value)}` });
    return false;
  }
}

/**
 * A job's `chaos`, checked by each strategy's own validation (so the config accepts exactly what
 * `build()` does) with unknown keys told by name; `false` for none, undefined after reporting a problem.
 */
export function jobChaos(value: unknown, report: Report): JobChaosOptions | false | undefined {
  if (value === undefined || value === false) return false;
  if (!isPlainObject(value)) {
    report({
      option: 'chaos',
      value,
      message: `expected false or { fault, latency, outcome, behavior } (each that chaos strategy's options), ${got(value)}`,
    });
    return undefined;
  }
  let valid = true;
  const problem: Report = (details) => {
    valid = false;
    report(details);
  };
  checkUnknownOptions(value, chaosKinds, 'chaos.', problem);
  for (const kind of chaosKinds) {
    const options = value[kind];
    if (options === undefined) continue;
    if (!isPlainObject(options)) {
      problem({
        option: `chaos.${kind}`,
        value: options,
        message: `expected the options of the chaos ${kind} strategy, ${got(options)}`,
      });
      continue;
    }
    const known = chaosOptions[kind] as readonly string[];
    checkUnknownOptions(options, known, `chaos.${kind}.`, problem);
    const given = known.filter((name) => options[name] !== undefined);
    const bad = given.filter(
      (name) => !acceptedBy(kind, { ...placeholders[kind], [name]: options[name] }, problem),
    );
    if (bad.length === 0) acceptedBy(kind, options, problem);
  }
  return valid ? (value as JobChaosOptions) : undefined;
}

/**
 * The job's chaos strategies as a pipeline of their own, run around each call of the job's `run`
 * (inside the attempt, so an injected fault is an attempt that failed); undefined when it has none.
 */
export function chaosPipeline(
  chaos: JobChaosOptions | undefined,
  options: PipelineBuilderOptions,
): ResiliencePipeline<unknown> | undefined {
  if (chaos === undefined) return undefined;
  let builder = new PipelineBuilder<unknown>(options);
  let any = false;
  for (const kind of chaosKinds) {
    const kindOptions = chaos[kind];
    if (kindOptions === undefined) continue;
    builder = builder.add((factories[kind] as (options: unknown) => StrategyFactory<never>)(kindOptions));
    any = true;
  }
  return any ? builder.build() : undefined;
}
