import type { ResilienceContext } from '../../pipeline/context.ts';
import { durationMs, parseDuration } from '../../pipeline/duration.ts';
import { checkCallbacks, checkOption } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import { callbackResult, invokeCallback } from '../../pipeline/pipeline.ts';
import { handleErrorsExceptAbort } from '../../pipeline/should-handle.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { delay as wait } from '../../pipeline/time.ts';
import { type BackoffState, maxComputedDelay, retryDelay } from './backoff.ts';
import {
  defaultBackoffType,
  defaultDelay,
  defaultMaxRetryAttempts,
  defaultUseJitter,
  maxRetryDelay,
  minRetryAttempts,
  minRetryDelay,
} from './defaults.ts';
import type { OnRetryArguments, RetryPredicateArguments, RetryStrategyOptions } from './options.ts';

const backoffTypes: readonly unknown[] = ['constant', 'linear', 'exponential'];

// Public under this name since the retry strategy came first; shared with the other strategies.
export { handleErrorsExceptAbort };

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
    create: (environment) => createRetry(options, environment),
  };
}

function createRetry(options: RetryStrategyOptions, environment: StrategyEnvironment): ResilienceStrategy {
  checkOption('retry', options, typeof options === 'object' && options !== null, 'an options object');
  const maxRetryAttempts = options.maxRetryAttempts ?? defaultMaxRetryAttempts;
  checkOption(
    'retry.maxRetryAttempts',
    maxRetryAttempts,
    (Number.isSafeInteger(maxRetryAttempts) || maxRetryAttempts === Infinity) &&
      maxRetryAttempts >= minRetryAttempts,
    'a whole number >= 1, or Infinity',
  );
  const backoffType = options.backoffType ?? defaultBackoffType;
  checkOption(
    'retry.backoffType',
    backoffType,
    backoffTypes.includes(backoffType),
    "'constant', 'linear' or 'exponential'",
  );
  const useJitter = options.useJitter ?? defaultUseJitter;
  checkOption('retry.useJitter', useJitter, typeof useJitter === 'boolean', 'true or false');
  const delay = parseDuration(options.delay ?? defaultDelay, 'retry.delay', minRetryDelay, maxRetryDelay);
  const maxDelay =
    options.maxDelay === undefined
      ? undefined
      : parseDuration(options.maxDelay, 'retry.maxDelay', minRetryDelay, maxRetryDelay);
  checkCallbacks(options, 'retry', ['shouldHandle', 'delayGenerator', 'onRetry', 'randomizer']);
  const { shouldHandle, delayGenerator, onRetry } = options;
  const random = options.randomizer ?? Math.random;
  const time = environment.timeProvider;
  // Reading the clock costs about as much as the rest of a successful attempt; only `duration`
  // needs it, and only onRetry and telemetry read `duration`.
  const measureDuration = onRetry !== undefined || environment.telemetryEnabled !== false;

  /**
   * The attempts after one that ended with `outcome` (started at `startedAt`): the outcome to
   * return, once `shouldHandle` accepts one or the attempts run out.
   */
  async function retryAfter<T>(
    outcome: Outcome<T, unknown>,
    startedAt: number,
    callback: Callback<T>,
    context: ResilienceContext,
    next: Next,
  ): Promise<Outcome<T, unknown>> {
    let state: BackoffState | undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        const args: RetryPredicateArguments = { outcome, context, attemptNumber: attempt };
        const handle = shouldHandle ? await shouldHandle(args) : handleErrorsExceptAbort(args);
        const duration = measureDuration ? time.monotonic() - startedAt : 0;
        // As in Polly: once the caller has aborted, the attempt's own outcome is final.
        if (handle !== true || attempt >= maxRetryAttempts || context.signal.aborted) return outcome;

        state ??= { previous: 0 };
        let retryDelayMs = retryDelay(backoffType, useJitter, attempt, delay, maxDelay, state, random);
        if (delayGenerator) {
          // Like Polly, a missing or invalid generated delay keeps the computed one.
          const generated = durationMs(await delayGenerator(args));
          if (generated <= maxComputedDelay) retryDelayMs = generated;
        }
        const onRetryArgs: OnRetryArguments = { ...args, retryDelay: retryDelayMs, duration };
        environment.report('OnRetry', context, onRetryArgs);
        if (onRetry) await onRetry(onRetryArgs);
        // An abort during onRetry ends the execution too: delay() rejects with the reason at once.
        if (retryDelayMs > 0 || context.signal.aborted) await wait(time, retryDelayMs, context.signal);
      } catch (error) {
        return Outcome.failure<T>(error);
      }
      startedAt = measureDuration ? time.monotonic() : 0;
      outcome = await next(callback, context);
      if (outcome.ok && shouldHandle === undefined) return outcome;
    }
  }

  // Not async: a first attempt that succeeds costs one promise reaction, none when retry is the
  // innermost strategy (it then calls the callback itself, as the pipeline's last step would).
  return {
    execute<T>(callback: Callback<T>, context: ResilienceContext, next: Next) {
      const startedAt = measureDuration ? time.monotonic() : 0;
      if (next === invokeCallback && shouldHandle === undefined) {
        return callbackResult(callback, context).then(Outcome.success<T, unknown>, (error: unknown) =>
          retryAfter(Outcome.failure<T>(error), startedAt, callback, context, next),
        );
      }
      return next(callback, context).then((outcome) =>
        outcome.ok && shouldHandle === undefined
          ? outcome
          : retryAfter(outcome, startedAt, callback, context, next),
      );
    },
  };
}
