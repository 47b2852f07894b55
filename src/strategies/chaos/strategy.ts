import type { ResilienceContext } from '../../pipeline/context.ts';
import { parseDuration } from '../../pipeline/duration.ts';
import { checkCallbacks, checkOption } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { delay } from '../../pipeline/time.ts';
import { defaultEnabled, defaultInjectionRate, defaultLatency } from './defaults.ts';
import type {
  ChaosBehaviorStrategyOptions,
  ChaosFaultStrategyOptions,
  ChaosLatencyStrategyOptions,
  ChaosOutcomeStrategyOptions,
  ChaosStrategyOptions,
  OnBehaviorInjectedArguments,
  OnFaultInjectedArguments,
  OnLatencyInjectedArguments,
  OnOutcomeInjectedArguments,
} from './options.ts';

/** Whether one execution is injected into. */
type Decide = (context: ResilienceContext) => boolean | PromiseLike<boolean>;

/** What a chaos strategy does to an execution it injects into, in place of running `next` as it is. */
type Inject = <T>(
  callback: Callback<T>,
  context: ResilienceContext,
  next: Next,
) => Promise<Outcome<T, unknown>>;

/**
 * Validates the options every chaos strategy shares (named `${prefix}.injectionRate`, ...) and
 * returns the per-execution decision (Polly's `ShouldInjectAsync`): enabled, then `randomizer()`
 * below the injection rate. Undefined when the strategy is off for good (`enabled: false` and no
 * `enabledGenerator`): it then costs nothing, and the randomizer is never called.
 */
function decisionOf(options: ChaosStrategyOptions, prefix: string): Decide | undefined {
  checkOption(prefix, options, typeof options === 'object' && options !== null, 'an options object');
  const { injectionRate = defaultInjectionRate, enabled = defaultEnabled } = options;
  checkOption(
    `${prefix}.injectionRate`,
    injectionRate,
    typeof injectionRate === 'number' && injectionRate >= 0 && injectionRate <= 1,
    'a number from 0 to 1',
  );
  checkOption(`${prefix}.enabled`, enabled, typeof enabled === 'boolean', 'true or false');
  checkCallbacks(options, prefix, ['injectionRateGenerator', 'enabledGenerator', 'randomizer']);
  const { injectionRateGenerator, enabledGenerator } = options;
  const random = options.randomizer ?? Math.random;
  if (enabledGenerator === undefined && !enabled) return undefined;
  if (enabledGenerator === undefined && injectionRateGenerator === undefined) {
    return () => random() < injectionRate;
  }
  return async (context) => {
    if (enabledGenerator && (await enabledGenerator({ context })) !== true) return false;
    let rate = injectionRate;
    if (injectionRateGenerator) {
      rate = await injectionRateGenerator({ context });
      // A rate out of 0..1 acts as clamped, as in Polly (random() is in [0, 1)); NaN would
      // silently mean never.
      checkOption(
        `${prefix}.injectionRateGenerator()`,
        rate,
        typeof rate === 'number' && !Number.isNaN(rate),
        'a number (clamped to 0..1)',
      );
    }
    return random() < rate;
  };
}

/**
 * A chaos strategy: `inject` for the executions `decide` picks, the rest of the pipeline as it is
 * for the others. An option callback that throws becomes the execution's failure. An execution left
 * alone by a plain decision (no generator) costs no promise of its own: chaos may stay in a
 * production pipeline at a low rate, as Polly intends.
 */
function chaosStrategy(decide: Decide | undefined, inject: Inject): ResilienceStrategy {
  if (decide === undefined) return { execute: (callback, context, next) => next(callback, context) };
  return {
    execute<T>(callback: Callback<T>, context: ResilienceContext, next: Next) {
      try {
        const decision = decide(context);
        if (decision === false) return next(callback, context);
        return Promise.resolve(decision)
          .then((injected) => (injected ? inject(callback, context, next) : next(callback, context)))
          .catch(Outcome.failure<T, unknown>);
      } catch (error) {
        return Promise.resolve(Outcome.failure<T>(error));
      }
    },
  };
}

/**
 * Injects a fault (Polly v8's chaos fault strategy): an injected execution fails with `fault` (or
 * `faultGenerator`'s error) without running the rest of the pipeline. Add it last (innermost), so
 * retry, timeout and circuit breaker see the fault as they would a real one.
 *
 * @example
 * new PipelineBuilder()
 *   .add(retryStrategy())
 *   .add(chaosFaultStrategy({ injectionRate: 0.1, fault: new Error('injected by chaos') }))
 *   .build();
 */
export function chaosFaultStrategy(options: ChaosFaultStrategyOptions): StrategyFactory<never> {
  return {
    name: 'chaos-fault',
    create: (environment) => createFault(options, environment),
  };
}

function createFault(
  options: ChaosFaultStrategyOptions,
  environment: StrategyEnvironment,
): ResilienceStrategy {
  const decide = decisionOf(options, 'chaosFault');
  const { fault, faultGenerator, onFaultInjected } = options;
  checkCallbacks(options, 'chaosFault', ['faultGenerator', 'onFaultInjected']);
  checkOption(
    'chaosFault.fault',
    fault,
    fault === undefined ? faultGenerator !== undefined : fault instanceof Error,
    fault === undefined ? 'an Error, or a faultGenerator: one of them is required' : 'an Error',
  );
  return chaosStrategy(decide, async (callback, context, next) => {
    const error = faultGenerator ? await faultGenerator({ context }) : fault;
    if (error == null) return next(callback, context);
    const args: OnFaultInjectedArguments = { context, fault: error };
    environment.report('Chaos.OnFault', context, args);
    if (onFaultInjected) await onFaultInjected(args);
    return Outcome.failure(error);
  });
}

/**
 * Injects latency (Polly v8's chaos latency strategy): an injected execution waits `latency` on
 * the pipeline's clock, then runs the rest of the pipeline. The wait ends at once, failing the
 * execution with the reason, when `context.signal` aborts: inside a timeout, a long enough latency
 * trips it.
 *
 * @example
 * new PipelineBuilder()
 *   .add(timeoutStrategy('2s'))
 *   .add(chaosLatencyStrategy({ injectionRate: 0.05, latency: '5s' }))
 *   .build();
 */
export function chaosLatencyStrategy(options: ChaosLatencyStrategyOptions = {}): StrategyFactory<never> {
  return {
    name: 'chaos-latency',
    create: (environment) => createLatency(options, environment),
  };
}

function createLatency(
  options: ChaosLatencyStrategyOptions,
  environment: StrategyEnvironment,
): ResilienceStrategy {
  const decide = decisionOf(options, 'chaosLatency');
  const latency = parseDuration(options.latency ?? defaultLatency, 'chaosLatency.latency');
  checkCallbacks(options, 'chaosLatency', ['latencyGenerator', 'onLatencyInjected']);
  const { latencyGenerator, onLatencyInjected } = options;
  return chaosStrategy(decide, async (callback, context, next) => {
    let ms = latency;
    if (latencyGenerator) {
      const value = await latencyGenerator({ context });
      // 0 or a negative number: nothing injected this time, as in Polly.
      ms =
        typeof value === 'number' && value <= 0 ? 0 : parseDuration(value, 'chaosLatency.latencyGenerator()');
    }
    if (ms > 0) {
      const args: OnLatencyInjectedArguments = { context, latency: ms };
      environment.report('Chaos.OnLatency', context, args);
      if (onLatencyInjected) await onLatencyInjected(args);
      await delay(environment.timeProvider, ms, context.signal);
    }
    return next(callback, context);
  });
}

/**
 * Injects an outcome (Polly v8's chaos outcome strategy): an injected execution returns
 * `outcomeGenerator`'s value, or fails with what it throws, without running the rest of the pipeline.
 *
 * @example
 * new PipelineBuilder()
 *   .add(chaosOutcomeStrategy({ injectionRate: 0.1, outcomeGenerator: () => ({ status: 503 }) }))
 *   .build();
 */
export function chaosOutcomeStrategy<R>(options: ChaosOutcomeStrategyOptions<R>): StrategyFactory<never> {
  return {
    name: 'chaos-outcome',
    create: (environment) => createOutcome(options as ChaosOutcomeStrategyOptions, environment),
  };
}

function createOutcome(
  options: ChaosOutcomeStrategyOptions,
  environment: StrategyEnvironment,
): ResilienceStrategy {
  const decide = decisionOf(options, 'chaosOutcome');
  const { outcomeGenerator, onOutcomeInjected } = options;
  checkOption(
    'chaosOutcome.outcomeGenerator',
    outcomeGenerator,
    typeof outcomeGenerator === 'function',
    'a function (it is required)',
  );
  checkCallbacks(options, 'chaosOutcome', ['onOutcomeInjected']);
  return chaosStrategy(decide, async <T>(_callback: Callback<T>, context: ResilienceContext) => {
    let outcome: Outcome<T, unknown>;
    try {
      // The pipeline is not typed by result: the caller vouches that the value fits T.
      outcome = Outcome.success((await outcomeGenerator({ context })) as T);
    } catch (error) {
      outcome = Outcome.failure<T>(error);
    }
    const args: OnOutcomeInjectedArguments = { context, outcome };
    environment.report('Chaos.OnOutcome', context, args);
    if (onOutcomeInjected) await onOutcomeInjected(args);
    return outcome;
  });
}

/**
 * Injects a behavior (Polly v8's chaos behavior strategy): an injected execution first runs
 * `behaviorGenerator`, a side effect such as restarting a dependency or dropping a cache, then the
 * rest of the pipeline; if the behavior throws, the execution fails with its error.
 *
 * @example
 * new PipelineBuilder()
 *   .add(chaosBehaviorStrategy({ injectionRate: 0.01, behaviorGenerator: () => cache.clear() }))
 *   .build();
 */
export function chaosBehaviorStrategy(options: ChaosBehaviorStrategyOptions): StrategyFactory<never> {
  return {
    name: 'chaos-behavior',
    create: (environment) => createBehavior(options, environment),
  };
}

function createBehavior(
  options: ChaosBehaviorStrategyOptions,
  environment: StrategyEnvironment,
): ResilienceStrategy {
  const decide = decisionOf(options, 'chaosBehavior');
  const { behaviorGenerator, onBehaviorInjected } = options;
  checkOption(
    'chaosBehavior.behaviorGenerator',
    behaviorGenerator,
    typeof behaviorGenerator === 'function',
    'a function (it is required)',
  );
  checkCallbacks(options, 'chaosBehavior', ['onBehaviorInjected']);
  return chaosStrategy(decide, async (callback, context, next) => {
    await behaviorGenerator({ context });
    const args: OnBehaviorInjectedArguments = { context };
    environment.report('Chaos.OnBehavior', context, args);
    if (onBehaviorInjected) await onBehaviorInjected(args);
    return next(callback, context);
  });
}
