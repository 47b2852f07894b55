import type { ResilienceContext } from '../../pipeline/context.ts';
import { parseDuration, parseDurationInRange } from '../../pipeline/duration.ts';
import { InvalidOptionError } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { delay as wait } from '../../pipeline/time.ts';
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
  return !outcome.ok && !(context.signal.aborted && outcome.error === context.signal.reason);
}

/**
 * Retries the rest of the pipeline when `shouldHandle` says so, waiting between attempts on
 * the pipeline's clock. Polly v8 semantics and defaults.
 *
 * @example
 * new PipelineBuilder().add(retryStrategy({ maxRetryAttempts: 5, delay: '200ms', backoffType: 'exponential', useJitter: true }))
 */
export function retryStrategy(options: RetryStrategyOptions = {}): StrategyFactory<never> {
  return {
    name: 'retry',
    create: (environment) => new RetryStrategy(options, environment),
  };
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
  readonly #environment: StrategyEnvironment;

  constructor(options: RetryStrategyOptions, environment: StrategyEnvironment) {
    const max = options.maxRetryAttempts ?? retryDefaults.maxRetryAttempts;
    if (
      !(max === Number.POSITIVE_INFINITY || Number.isSafeInteger(max)) ||
      max < retryLimits.maxRetryAttempts.min
    ) {
      throw new InvalidOptionError('retry.maxRetryAttempts', max, 'a whole number >= 1, or Infinity');
    }
    const backoffType = options.backoffType ?? retryDefaults.backoffType;
    if (!backoffTypes.includes(backoffType)) {
      throw new InvalidOptionError('retry.backoffType', backoffType, "'constant', 'linear' or 'exponential'");
    }
    const { min, max: maxDelay } = retryLimits.delay;
    this.#maxRetryAttempts = max;
    this.#delay = parseDurationInRange(options.delay ?? retryDefaults.delay, 'retry.delay', min, maxDelay);
    this.#maxDelay =
      options.maxDelay === undefined
        ? undefined
        : parseDurationInRange(options.maxDelay, 'retry.maxDelay', min, maxDelay);
    this.#backoffType = backoffType;
    this.#useJitter = options.useJitter ?? retryDefaults.useJitter;
    for (const name of ['shouldHandle', 'delayGenerator', 'onRetry', 'randomizer'] as const) {
      if (options[name] !== undefined && typeof options[name] !== 'function') {
        throw new InvalidOptionError(`retry.${name}`, options[name], 'a function');
      }
    }
    this.#shouldHandle = options.shouldHandle;
    this.#delayGenerator = options.delayGenerator;
    this.#onRetry = options.onRetry;
    this.#random = options.randomizer ?? Math.random;
    this.#environment = environment;
  }

  async execute<T>(
    callback: Callback<T>,
    context: ResilienceContext,
    next: Next,
  ): Promise<Outcome<T, unknown>> {
    const time = this.#environment.timeProvider;
    const state: BackoffState = { previous: 0 };
    for (let attempt = 0; ; attempt++) {
      const startedAt = time.monotonic();
      const outcome = await next(callback, context);
      if (outcome.ok && this.#shouldHandle === undefined) return outcome;
      const args: RetryPredicateArguments = { outcome, context, attemptNumber: attempt };
      const handle = this.#shouldHandle ? await this.#shouldHandle(args) : handleErrorsExceptAbort(args);
      if (!handle || attempt >= this.#maxRetryAttempts) return outcome;
      if (context.signal.aborted) return Outcome.failure(context.signal.reason);

      let retryDelayMs = retryDelay(
        this.#backoffType,
        this.#useJitter,
        attempt,
        this.#delay,
        this.#maxDelay,
        state,
        this.#random,
      );
      if (this.#delayGenerator) {
        const generated = await this.#delayGenerator(args);
        // Like Polly, a missing or invalid generated delay keeps the computed one.
        const ms = typeof generated === 'string' ? parseDurationOrUndefined(generated) : generated;
        if (typeof ms === 'number' && ms >= 0 && ms <= retryLimits.delay.max) retryDelayMs = ms;
      }
      const onRetryArgs: OnRetryArguments = {
        ...args,
        retryDelay: retryDelayMs,
        duration: time.monotonic() - startedAt,
      };
      this.#environment.report('OnRetry', context, onRetryArgs);
      if (this.#onRetry) await this.#onRetry(onRetryArgs);
      if (retryDelayMs > 0) {
        try {
          await wait(time, retryDelayMs, context.signal);
        } catch (reason) {
          return Outcome.failure(reason);
        }
      } else if (context.signal.aborted) {
        return Outcome.failure(context.signal.reason);
      }
    }
  }
}

function parseDurationOrUndefined(value: string): number | undefined {
  try {
    return parseDuration(value, 'retry.delayGenerator()');
  } catch {
    return undefined;
  }
}
