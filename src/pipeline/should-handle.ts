import type { ResilienceContext } from './context.ts';
import type { Outcome } from './outcome.ts';

/**
 * True when `error` is the reason `context.signal` aborted with: the caller (or an outer
 * strategy) cancelled the execution, so the failure says nothing about the callback.
 */
export function isAbortOf(context: ResilienceContext, error: unknown): boolean {
  const signal = context.signal;
  return signal.aborted && error === signal.reason;
}

/**
 * The default `shouldHandle` of retry, circuit breaker, fallback and hedging: every error except
 * an abort of the caller's signal; successful values are not handled.
 *
 * @example
 * retryStrategy({ shouldHandle: (args) => handleErrorsExceptAbort(args) && !isNotFound(args.outcome) })
 */
export function handleErrorsExceptAbort({
  outcome,
  context,
}: {
  readonly outcome: Outcome<unknown, unknown>;
  readonly context: ResilienceContext;
}): boolean {
  return !outcome.ok && !isAbortOf(context, outcome.error);
}
