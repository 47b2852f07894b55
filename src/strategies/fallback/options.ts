import type { ResilienceContext } from '../../pipeline/context.ts';
import type { Outcome } from '../../pipeline/outcome.ts';

/**
 * What the fallback's callbacks receive. `E` types the errors `outcome.match()` can name by code:
 * the errors of the strategies added after (inside) the fallback, which the fallback cannot infer,
 * so you state them, e.g. `FallbackStrategyOptions<string[], BrokenCircuitError>`. Defaults to none.
 */
export interface FallbackPredicateArguments<E = never> {
  /** The outcome of the rest of the pipeline: `outcome.ok` with `value`, or `error`. */
  readonly outcome: Outcome<unknown, E>;
  readonly context: ResilienceContext;
}

export interface FallbackActionArguments<E = never> extends FallbackPredicateArguments<E> {}

export interface OnFallbackArguments<E = never> extends FallbackPredicateArguments<E> {}

/**
 * Options of the fallback strategy. `R` is the type of the alternative value. A pipeline is not
 * typed by result (one pipeline serves callbacks of many types), so `pipeline.execute(cb)` is still
 * typed by `cb`'s result: return from `fallbackAction` a value your callbacks could have returned.
 */
export interface FallbackStrategyOptions<R = unknown, E = never> {
  /**
   * Produces the alternative value, e.g. a cached copy or an empty list. Its value becomes the
   * execution's result; if it throws, that error becomes the execution's error. Required.
   */
  fallbackAction: (args: FallbackActionArguments<E>) => R | PromiseLike<R>;
  /**
   * Decides whether an outcome is replaced by the fallback. Defaults to every error except an abort
   * of the caller's signal; successful values are kept.
   */
  shouldHandle?: (args: FallbackPredicateArguments<E>) => boolean | PromiseLike<boolean>;
  /** Called before `fallbackAction`, e.g. to log the outcome being replaced. */
  onFallback?: (args: OnFallbackArguments<E>) => void | PromiseLike<void>;
}
