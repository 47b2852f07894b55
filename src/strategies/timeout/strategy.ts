import { DerivedSignal, type ResilienceContext } from '../../pipeline/context.ts';
import { type Duration, parseDuration, parseDurationInRange } from '../../pipeline/duration.ts';
import { InvalidOptionError } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { timeoutDefaults, timeoutLimits } from './defaults.ts';
import { TimeoutRejectedError } from './errors.ts';
import type { OnTimeoutArguments, TimeoutStrategyOptions } from './options.ts';

/**
 * Aborts the callback's `context.signal` when `timeout` elapses. Cooperative, as in Polly v8: the
 * callback must honour its signal; if it then fails, the execution fails with
 * `TimeoutRejectedError`. An abort of the caller's own signal passes through untouched.
 *
 * @example
 * new PipelineBuilder().add(timeoutStrategy('5s'))
 */
export function timeoutStrategy(
  options: TimeoutStrategyOptions | Duration = {},
): StrategyFactory<TimeoutRejectedError> {
  const resolved: TimeoutStrategyOptions = typeof options === 'object' ? options : { timeout: options };
  return {
    name: 'timeout',
    create: (environment) => new TimeoutStrategy(resolved, environment),
  };
}

class TimeoutStrategy implements ResilienceStrategy {
  readonly #timeout: number;
  readonly #generator: TimeoutStrategyOptions['timeoutGenerator'];
  readonly #onTimeout: TimeoutStrategyOptions['onTimeout'];
  readonly #environment: StrategyEnvironment;

  constructor(options: TimeoutStrategyOptions, environment: StrategyEnvironment) {
    const { min, max } = timeoutLimits.timeout;
    this.#timeout = parseDurationInRange(
      options.timeout ?? timeoutDefaults.timeout,
      'timeout.timeout',
      min,
      max,
    );
    for (const name of ['timeoutGenerator', 'onTimeout'] as const) {
      if (options[name] !== undefined && typeof options[name] !== 'function') {
        throw new InvalidOptionError(`timeout.${name}`, options[name], 'a function');
      }
    }
    this.#generator = options.timeoutGenerator;
    this.#onTimeout = options.onTimeout;
    this.#environment = environment;
  }

  async execute<T>(
    callback: Callback<T>,
    context: ResilienceContext,
    next: Next,
  ): Promise<Outcome<T, unknown>> {
    const timeout = this.#generator ? await this.#generated(context) : this.#timeout;
    if (!(timeout > 0 && timeout < Number.POSITIVE_INFINITY)) return next(callback, context);

    const time = this.#environment.timeProvider;
    const signal = new DerivedSignal(context);
    let error: TimeoutRejectedError | undefined;
    const timer = time.setTimeout(() => {
      if (context.signal.aborted) return;
      error = new TimeoutRejectedError(timeout);
      signal.abort(error);
    }, timeout);
    let outcome: Outcome<T, unknown>;
    try {
      outcome = await next(callback, context.derive(signal));
    } finally {
      time.clearTimeout(timer);
      signal.dispose();
    }
    if (error === undefined || outcome.ok) return outcome;
    if (outcome.error !== error) error = new TimeoutRejectedError(timeout, { cause: outcome.error });
    const args: OnTimeoutArguments = { context, timeout };
    this.#environment.report('OnTimeout', context, args);
    if (this.#onTimeout) await this.#onTimeout(args);
    return Outcome.failure(error);
  }

  async #generated(context: ResilienceContext): Promise<number> {
    const value = await this.#generator!({ context });
    if (typeof value === 'number' && (value <= 0 || value === Number.POSITIVE_INFINITY)) return 0;
    return parseDuration(value, 'timeout.timeoutGenerator()');
  }
}
