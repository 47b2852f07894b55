import type { ResilienceContext } from '../../pipeline/context.ts';
import { parseDuration } from '../../pipeline/duration.ts';
import { checkCallbacks, checkOption, describeValue } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import { isAbortOf } from '../../pipeline/should-handle.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { wholeNumber } from '../../pipeline/whole-number.ts';
import { type CircuitBehavior, ConsecutiveFailuresBehavior, FailureRatioBehavior } from './behavior.ts';
import { CircuitController } from './controller.ts';
import { circuitBreakerDefaults, circuitBreakerLimits } from './defaults.ts';
import type { BrokenCircuitError, IsolatedCircuitError } from './errors.ts';
import { createHealthMetrics } from './health-metrics.ts';
import { attach, CircuitBreakerManualControl, CircuitBreakerStateProvider } from './manual-control.ts';
import type { CircuitBreakerPredicateArguments, CircuitBreakerStrategyOptions } from './options.ts';
import { isSharedCircuitStore } from './shared.ts';

/**
 * Stops calling a failing dependency for a while. Polly v8 semantics and defaults: the circuit
 * breaks when at least 10% of at least 100 executions in the last 30 s failed, rejects executions
 * with `BrokenCircuitError` for 5 s, then lets one probe through: its success closes the circuit,
 * its failure opens it again. With `consecutiveFailures: n` it breaks after n failures in a row.
 * The circuit's state lives in the built pipeline: share the pipeline, not the options.
 *
 * @example
 * new PipelineBuilder().add(circuitBreakerStrategy({ failureRatio: 0.5, minimumThroughput: 20, breakDuration: '30s' }))
 */
export function circuitBreakerStrategy(
  options: CircuitBreakerStrategyOptions = {},
): StrategyFactory<BrokenCircuitError | IsolatedCircuitError> {
  return {
    name: 'circuit-breaker',
    create: (environment) => new CircuitBreakerStrategy(options, environment),
  };
}

class CircuitBreakerStrategy implements ResilienceStrategy {
  readonly #controller: CircuitController;
  readonly #shouldHandle: CircuitBreakerStrategyOptions['shouldHandle'];

  constructor(options: CircuitBreakerStrategyOptions, environment: StrategyEnvironment) {
    checkCallbacks(options, 'circuitBreaker', [
      'shouldHandle',
      'breakDurationGenerator',
      'onOpened',
      'onClosed',
      'onHalfOpened',
    ]);
    const { manualControl, stateProvider } = options;
    checkOption(
      'circuitBreaker.manualControl',
      manualControl,
      manualControl === undefined || manualControl instanceof CircuitBreakerManualControl,
      'a CircuitBreakerManualControl',
    );
    checkOption(
      'circuitBreaker.stateProvider',
      stateProvider,
      stateProvider === undefined || stateProvider instanceof CircuitBreakerStateProvider,
      'a CircuitBreakerStateProvider',
    );
    checkOption(
      'circuitBreaker.stateProvider',
      stateProvider,
      !stateProvider?.isAttached,
      'a CircuitBreakerStateProvider not yet attached to a circuit breaker (each build() needs its own)',
    );
    const { min, max } = circuitBreakerLimits.breakDuration;
    const breakDuration = parseDuration(
      options.breakDuration ?? circuitBreakerDefaults.breakDuration,
      'circuitBreaker.breakDuration',
      min,
      max,
    );
    this.#shouldHandle = options.shouldHandle;
    const behavior = createBehavior(options, environment);
    const { store } = options;
    if (store === undefined) {
      this.#controller = new CircuitController(breakDuration, behavior, options, environment);
    } else {
      // The store makes the shared breaker, so a pipeline without one carries none of its code.
      checkOption(
        'circuitBreaker.store',
        store,
        isSharedCircuitStore(store),
        'a store that shares circuits: MemoryLockStore, RedisLockStore, PostgresLockStore, MysqlLockStore, or one with sharedCircuitBreaker()',
      );
      this.#controller = store.sharedCircuitBreaker({ breakDuration, behavior, options, environment });
    }
    stateProvider?.[attach](this.#controller);
    manualControl?.[attach](this.#controller);
  }

  execute<T>(callback: Callback<T>, context: ResilienceContext, next: Next): Promise<Outcome<T, unknown>> {
    const admission = this.#controller.admit(context);
    // Closed: a plain then() instead of an async function saves a turn of the microtask queue
    // on the path every call takes.
    if (admission === false) {
      return next(callback, context).then((outcome) => this.#completed(outcome, context, false));
    }
    if (admission === true) return this.#probe(callback, context, next);
    return Promise.resolve(Outcome.failure(admission));
  }

  async #probe<T>(
    callback: Callback<T>,
    context: ResilienceContext,
    next: Next,
  ): Promise<Outcome<T, unknown>> {
    const halfOpened = this.#controller.takeEvent();
    if (halfOpened) {
      try {
        await halfOpened;
      } catch (error) {
        this.#controller.releaseProbe();
        return Outcome.failure(error);
      }
    }
    return this.#completed(await next(callback, context), context, true);
  }

  #completed<T>(
    outcome: Outcome<T, unknown>,
    context: ResilienceContext,
    isProbe: boolean,
  ): Outcome<T, unknown> | Promise<Outcome<T, unknown>> {
    if (this.#shouldHandle === undefined) {
      return this.#record(outcome, !outcome.ok && !isAbortOf(context, outcome.error), context, isProbe);
    }
    const args: CircuitBreakerPredicateArguments = { outcome, context };
    let handled: boolean | PromiseLike<boolean>;
    try {
      handled = this.#shouldHandle(args);
    } catch (error) {
      return this.#undecided(error, isProbe);
    }
    return Promise.resolve(handled).then(
      (handled) => this.#record(outcome, handled, context, isProbe),
      (error: unknown) => this.#undecided<T>(error, isProbe),
    );
  }

  /** `shouldHandle` threw: its error is the execution's, the outcome counts neither way. */
  #undecided<T>(error: unknown, isProbe: boolean): Outcome<T, unknown> {
    if (isProbe) this.#controller.releaseProbe();
    return Outcome.failure(error);
  }

  #record<T>(
    outcome: Outcome<T, unknown>,
    handled: boolean,
    context: ResilienceContext,
    isProbe: boolean,
  ): Outcome<T, unknown> | Promise<Outcome<T, unknown>> {
    const controller = this.#controller;
    // An aborted probe says nothing about the dependency's health.
    if (!handled && controller.state === 'half-open' && !outcome.ok && isAbortOf(context, outcome.error)) {
      if (isProbe) controller.releaseProbe();
      return outcome;
    }
    const transition = controller.record(outcome, handled, context);
    // A throwing onOpened / onClosed fails this execution; the transition has happened all the same.
    return transition ? transition.then(() => outcome, Outcome.failure<T, unknown>) : outcome;
  }
}

function createBehavior(
  options: CircuitBreakerStrategyOptions,
  environment: StrategyEnvironment,
): CircuitBehavior {
  if (options.consecutiveFailures !== undefined) {
    const { min, max } = circuitBreakerLimits.consecutiveFailures;
    const consecutiveFailures = wholeNumber(
      options.consecutiveFailures,
      'circuitBreaker.consecutiveFailures',
      min,
      max,
    );
    const ratioOptions = (['failureRatio', 'minimumThroughput', 'samplingDuration'] as const).filter(
      (name) => options[name] !== undefined,
    );
    checkOption(
      'circuitBreaker.consecutiveFailures',
      consecutiveFailures,
      ratioOptions.length === 0,
      `to be used without ${ratioOptions.join(', ')} (they configure the failure-ratio mode; got ${ratioOptions
        .map((name) => `${name} ${describeValue(options[name])}`)
        .join(', ')})`,
    );
    return new ConsecutiveFailuresBehavior(consecutiveFailures);
  }

  const failureRatio = options.failureRatio ?? circuitBreakerDefaults.failureRatio;
  checkOption(
    'circuitBreaker.failureRatio',
    failureRatio,
    typeof failureRatio === 'number' && failureRatio > 0 && failureRatio <= 1,
    'a number above 0, up to 1',
  );
  const throughputLimits = circuitBreakerLimits.minimumThroughput;
  const minimumThroughput = wholeNumber(
    options.minimumThroughput ?? circuitBreakerDefaults.minimumThroughput,
    'circuitBreaker.minimumThroughput',
    throughputLimits.min,
    throughputLimits.max,
  );
  const { min, max } = circuitBreakerLimits.samplingDuration;
  const samplingDuration = parseDuration(
    options.samplingDuration ?? circuitBreakerDefaults.samplingDuration,
    'circuitBreaker.samplingDuration',
    min,
    max,
  );
  return new FailureRatioBehavior(
    failureRatio,
    minimumThroughput,
    createHealthMetrics(samplingDuration, environment.timeProvider),
  );
}
