import type { ResilienceContext } from '../../pipeline/context.ts';
import { checkCallbacks, checkOption } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import { handleErrorsExceptAbort } from '../../pipeline/should-handle.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import type { FallbackPredicateArguments, FallbackStrategyOptions, OnFallbackArguments } from './options.ts';

/**
 * Replaces a failed outcome with an alternative value (Polly v8's fallback): when `shouldHandle`
 * accepts the outcome of the rest of the pipeline, `onFallback` is called, then `fallbackAction`'s
 * value (or error) becomes the result. Add it first, so it sees what every other strategy gave up on.
 *
 * @example
 * new PipelineBuilder()
 *   .add(fallbackStrategy({ fallbackAction: () => cachedPrices }))
 *   .add(circuitBreakerStrategy())
 *   .build();
 */
export function fallbackStrategy<R, E = never>(
  options: FallbackStrategyOptions<R, E>,
): StrategyFactory<never> {
  return {
    name: 'fallback',
    create: (environment) =>
      new FallbackStrategy(options as FallbackStrategyOptions<unknown, unknown>, environment),
  };
}

class FallbackStrategy implements ResilienceStrategy {
  readonly #fallbackAction: FallbackStrategyOptions<unknown, unknown>['fallbackAction'];
  readonly #shouldHandle: FallbackStrategyOptions<unknown, unknown>['shouldHandle'];
  readonly #onFallback: FallbackStrategyOptions<unknown, unknown>['onFallback'];
  readonly #environment: StrategyEnvironment;

  constructor(options: FallbackStrategyOptions<unknown, unknown>, environment: StrategyEnvironment) {
    checkOption(
      'fallback.fallbackAction',
      options?.fallbackAction,
      typeof options?.fallbackAction === 'function',
      'a function (it is required)',
    );
    checkCallbacks(options, 'fallback', ['shouldHandle', 'onFallback']);
    this.#fallbackAction = options.fallbackAction;
    this.#shouldHandle = options.shouldHandle;
    this.#onFallback = options.onFallback;
    this.#environment = environment;
  }

  async execute<T>(
    callback: Callback<T>,
    context: ResilienceContext,
    next: Next,
  ): Promise<Outcome<T, unknown>> {
    const outcome = await next(callback, context);
    if (outcome.ok && this.#shouldHandle === undefined) return outcome;
    try {
      const args: FallbackPredicateArguments<unknown> = { outcome, context };
      const handle = this.#shouldHandle ? await this.#shouldHandle(args) : handleErrorsExceptAbort(args);
      if (!handle) return outcome;

      const onFallbackArgs: OnFallbackArguments<unknown> = args;
      this.#environment.report('OnFallback', context, onFallbackArgs);
      if (this.#onFallback) await this.#onFallback(onFallbackArgs);
      // The pipeline is not typed by result: the caller vouches that the fallback value fits T.
      return Outcome.success((await this.#fallbackAction(args)) as T);
    } catch (error) {
      // shouldHandle, onFallback and fallbackAction alike: their error is the execution's.
      return Outcome.failure(error);
    }
  }
}
