import type { ResilienceContext } from '../../pipeline/context.ts';
import type { Duration } from '../../pipeline/duration.ts';
import type { Outcome } from '../../pipeline/outcome.ts';

export interface EnabledGeneratorArguments {
  readonly context: ResilienceContext;
}

export interface InjectionRateGeneratorArguments {
  readonly context: ResilienceContext;
}

/**
 * What every chaos strategy takes (Polly v8's `ChaosStrategyOptions`, camelCased): whether it is on,
 * and the share of executions it injects into. An execution is injected into when it is enabled and
 * `randomizer()` is below the injection rate.
 */
export interface ChaosStrategyOptions {
  /**
   * The share of executions to inject into, from 0 (none) to 1 (every one). Defaults to 0.001
   * (one in a thousand), as in Polly.
   */
  injectionRate?: number;
  /**
   * Chooses the injection rate per execution, overriding `injectionRate`; its result is clamped to
   * 0..1 (a result that is not a number fails the execution with `InvalidOptionError`). Defaults to none.
   */
  injectionRateGenerator?: (args: InjectionRateGeneratorArguments) => number | PromiseLike<number>;
  /** `false` turns the strategy off: it then only runs the rest of the pipeline. Defaults to true. */
  enabled?: boolean;
  /**
   * Decides per execution whether the strategy is on, overriding `enabled` (e.g. from a feature
   * flag or a header). Defaults to none.
   */
  enabledGenerator?: (args: EnabledGeneratorArguments) => boolean | PromiseLike<boolean>;
  /** Source of randomness for the injection decision, returning [0, 1). Defaults to `Math.random`. */
  randomizer?: () => number;
}

export interface FaultGeneratorArguments {
  readonly context: ResilienceContext;
}

export interface OnFaultInjectedArguments {
  readonly context: ResilienceContext;
  /** The injected error. */
  readonly fault: Error;
}

/**
 * Options of the chaos fault strategy: `fault` or `faultGenerator` is required.
 *
 * @example
 * chaosFaultStrategy({ injectionRate: 0.1, fault: new Error('injected by chaos') })
 */
export interface ChaosFaultStrategyOptions extends ChaosStrategyOptions {
  /** The error an injected execution fails with. Defaults to none (then `faultGenerator` is required). */
  fault?: Error;
  /**
   * Makes the error per injected execution, overriding `fault`; `undefined` (or `null`) injects
   * nothing for that execution. Defaults to none.
   */
  faultGenerator?: (args: FaultGeneratorArguments) => Error | undefined | PromiseLike<Error | undefined>;
  /** Called when a fault is injected, before the execution fails with it. Defaults to none. */
  onFaultInjected?: (args: OnFaultInjectedArguments) => void | PromiseLike<void>;
}

export interface LatencyGeneratorArguments {
  readonly context: ResilienceContext;
}

export interface OnLatencyInjectedArguments {
  readonly context: ResilienceContext;
  /** The injected delay, in milliseconds. */
  readonly latency: number;
}

/**
 * Options of the chaos latency strategy.
 *
 * @example
 * chaosLatencyStrategy({ injectionRate: 0.05, latency: '5s' })
 */
export interface ChaosLatencyStrategyOptions extends ChaosStrategyOptions {
  /** How long an injected execution waits before the rest of the pipeline runs. 0 or more. Defaults to 30 s. */
  latency?: Duration;
  /**
   * Chooses the delay per injected execution, overriding `latency`; 0 or a negative number injects
   * nothing for that execution. Defaults to none.
   */
  latencyGenerator?: (args: LatencyGeneratorArguments) => Duration | PromiseLike<Duration>;
  /** Called when a delay is injected, before it starts. Defaults to none. */
  onLatencyInjected?: (args: OnLatencyInjectedArguments) => void | PromiseLike<void>;
}

export interface OutcomeGeneratorArguments {
  readonly context: ResilienceContext;
}

export interface OnOutcomeInjectedArguments {
  readonly context: ResilienceContext;
  /** The injected outcome: a value, or the error `outcomeGenerator` threw. */
  readonly outcome: Outcome<unknown, unknown>;
}

/**
 * Options of the chaos outcome strategy. `R` is the type of the injected value: a pipeline is not
 * typed by result, so return a value your callbacks could have returned.
 *
 * @example
 * chaosOutcomeStrategy({ injectionRate: 0.1, outcomeGenerator: () => ({ status: 503 }) })
 */
export interface ChaosOutcomeStrategyOptions<R = unknown> extends ChaosStrategyOptions {
  /**
   * Makes the outcome of an injected execution in place of the callback: its value becomes the
   * result, an error it throws (or rejects with) the execution's error. Required.
   */
  outcomeGenerator: (args: OutcomeGeneratorArguments) => R | PromiseLike<R>;
  /** Called when an outcome is injected, before it is returned. Defaults to none. */
  onOutcomeInjected?: (args: OnOutcomeInjectedArguments) => void | PromiseLike<void>;
}

export interface BehaviorGeneratorArguments {
  readonly context: ResilienceContext;
}

export interface OnBehaviorInjectedArguments {
  readonly context: ResilienceContext;
}

/**
 * Options of the chaos behavior strategy.
 *
 * @example
 * chaosBehaviorStrategy({ injectionRate: 0.01, behaviorGenerator: () => cache.clear() })
 */
export interface ChaosBehaviorStrategyOptions extends ChaosStrategyOptions {
  /**
   * The side effect run before the rest of the pipeline in an injected execution (restart a
   * dependency, fill a disk, drop a cache); if it throws, the execution fails with its error. Required.
   */
  behaviorGenerator: (args: BehaviorGeneratorArguments) => void | PromiseLike<void>;
  /** Called after the behavior ran, before the rest of the pipeline. Defaults to none. */
  onBehaviorInjected?: (args: OnBehaviorInjectedArguments) => void | PromiseLike<void>;
}
