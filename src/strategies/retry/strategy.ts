import type { ResilienceContext } from '../../pipeline/context.ts';
import { parseDurationInRange } from '../../pipeline/duration.ts';
import { InvalidOptionError } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { type TimeProvider, delay as wait } from '../../pipeline/time.ts';
import { type BackoffState, retryDelay } from './backoff.ts';
import { retryDefaults, retryLimits } from './defaults.ts';
import type {
  BackoffType,
  OnRetryArguments,
  RetryPredicateArguments,
  RetryStrategyOptions,
} from './options.ts';

const backoffTypes: readonly BackoffType[] = ['constant', 'linear', 'exponential'];

/** The default `shouldHandle`: every error except an abort of the caller's signal. */
export function handleErrorsExceptAbort({ outcome, context }: RetryPredicateArguments): boolean {
  if (outcome.ok) return false;
  const signal = context.signal;
  return !(signal.aborted && outcome.error === signal.reason);
}

/**
 * Retries the rest of the pipeline when `shouldHandle` says so, waiting between attempts on
 * the pipeline's clock. Polly v8 semantics and defaults: 3 retries, 2 s constant delay, every
 * error but the caller's abort. The wait stops at once when the caller's signal aborts.
 *
 * @example
 * new PipelineBuilder()
 *   .add(retryStrategy({ maxRetryAttempts: 5, delay: '200ms', backoffType: 'exponential', useJitter: true }))
 *   .build();
 */
export function retryStrategy(options: RetryStrategyOptions = {}): StrategyFactory<never> {
  return {
    name: 'retry',
    create: (environment) => new RetryStrategy(options, environment),
  };
}

function validated(options: RetryStrategyOptions) {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidOptionError('retry', options, 'an options object');
  }
  const maxRetryAttempts = options.maxRetryAttempts ?? retryDefaults.maxRetryAttempts;
  if (
    typeof maxRetryAttempts !== 'number' ||
    !(Number.isSafeInteger(maxRetryAttempts) || maxRetryAttempts === Number.POSITIVE_INFINITY) ||
    maxRetryAttempts < retryLimits.maxRetryAttempts.min
  ) {
    throw new InvalidOptionError(
      'retry.maxRetryAttempts',
      maxRetryAttempts,
      'a whole number >= 1, or Infinity',
    );
  }
  const backoffType = options.backoffType ?? retryDefaults.backoffType;
  if (!backoffTypes.includes(backoffType)) {
    throw new InvalidOptionError('retry.backoffType', backoffType, "'constant', 'linear' or 'exponential'");
  }
  const useJitter = options.useJitter ?? retryDefaults.useJitter;
  if (typeof useJitter !== 'boolean')
    throw new InvalidOptionError('retry.useJitter', useJitter, 'true or false');
  const { min, max } = retryLimits.delay;
  const delay = parseDurationInRange(options.delay ?? retryDefaults.delay, 'retry.delay', min, max);
  const maxDelay =
    options.maxDelay === undefined
      ? undefined
      : parseDurationInRange(options.maxDelay, 'retry.maxDelay', min, max);
  for (const name of ['shouldHandle', 'delayGenerator', 'onRetry', 'randomizer'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new InvalidOptionError(`retry.${name}`, options[name], 'a function');
    }
  }
  return { maxRetryAttempts, backoffType, useJitter, delay, maxDelay };
}

class RetryStrategy implements ResilienceStrategy {
  readonly #maxRetryAttempts: number;
  readonly #delay: number;
  readonly #backoffType: BackoffType;
  readonly #useJitter: boolean;
  readonly #maxDelay: number | undefined;
  readonly #shouldHandle: RetryStrategyOptions['shouldHandle'];
  readonly #delayGenerator: RetryStrategyOptions['delayGenerator'];
  readonly #onRetry: RetryStrategyOptions['onRetry'];
  readonly #random: () => number;
  readonly #time: TimeProvider;
  readonly #environment: StrategyEnvironment;
  // Reading the clock costs about as much as the rest of a successful attempt; only `duration`
  // needs it, and only onRetry and telemetry read `duration`.
  readonly #measureDuration: boolean;

  constructor(options: RetryStrategyOptions, environment: StrategyEnvironment) {
    const settings = validated(options);
    this.#maxRetryAttempts = settings.maxRetryAttempts;
    this.#delay = settings.delay;
    this.#maxDelay = settings.maxDelay;
    this.#backoffType = settings.backoffType;
    this.#useJitter = settings.useJitter;
    this.#shouldHandle = options.shouldHandle;
    this.#delayGenerator = options.delayGenerator;
    this.#onRetry = options.onRetry;
    this.#random = options.randomizer ?? Math.random;
    this.#time = environment.timeProvider;
    this.#environment = environment;
    this.#measureDuration = options.onRetry !== undefined || environment.telemetryEnabled !== false;
  }

  async execute<T>(
    callback: Callback<T>,
    context: ResilienceContext,
    next: Next,
  ): Promise<Outcome<T, unknown>> {
    const time = this.#time;
    let state: BackoffState | undefined;
    for (let attempt = 0; ; attempt++) {
      const startedAt = this.#measureDuration ? time.monotonic() : 0;
      const outcome = await next(callback, context);
      if (outcome.ok && this.#shouldHandle === undefined) return outcome;

      let retryDelayMs: number;
      try {
        const args: RetryPredicateArguments = { outcome, context, attemptNumber: attempt };
        const handle = this.#shouldHandle ? await this.#shouldHandle(args) : handleErrorsExceptAbort(args);
        const duration = this.#measureDuration ? time.monotonic() - startedAt : 0;
        // As in Polly: once the caller has aborted, the attempt's own outcome is final.
        if (handle !== true || attempt >= this.#maxRetryAttempts || context.signal.aborted) return outcome;

        state ??= { previous: 0 };
        retryDelayMs = retryDelay(
          this.#backoffType,
          this.#useJitter,
          attempt,
          this.#delay,
          this.#maxDelay,
          state,
          this.#random,
        );
        if (this.#delayGenerator) {
          const generated = generatedDelay(await this.#delayGenerator(args));
          if (generated !== undefined) retryDelayMs = generated;
        }
        const onRetryArgs: OnRetryArguments = { ...args, retryDelay: retryDelayMs, duration };
        this.#environment.report('OnRetry', context, onRetryArgs);
        if (this.#onRetry) await this.#onRetry(onRetryArgs);
      } catch (error) {
        return Outcome.failure(error);
      }

      if (context.signal.aborted) return Outcome.failure(context.signal.reason);
      if (retryDelayMs > 0) {
        try {
          await wait(time, retryDelayMs, context.signal);
        } catch (reason) {
          return Outcome.failure(reason);
        }
      }
    }
  }
}

/** Like Polly, a missing or invalid generated delay keeps the computed one. */
function generatedDelay(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  try {
    return parseDurationInRange(value, 'retry.delayGenerator()', 0, Number.MAX_SAFE_INTEGER);
  } catch {
    return undefined;
  }
}
