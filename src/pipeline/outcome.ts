import { isResilienceError } from './errors.ts';

/** The codes of the resil errors in `E` (never for errors without a literal `code`). */
export type ErrorCode<E> = E extends { readonly code: infer C extends string } ? C : never;

/**
 * Handlers for {@link Outcome.match}: `ok` for a value, one optional handler per error code the
 * pipeline can raise (typed as that error), and `error` for everything else, including whatever
 * the callback itself threw.
 */
export type MatchHandlers<T, E, R> = {
  ok: (value: T) => R;
  error: (error: unknown) => R;
} & { [C in ErrorCode<E>]?: (error: Extract<E, { readonly code: C }>) => R };

interface OutcomeMethods<T, E> {
  /** Calls the handler for this outcome: `ok`, the one named by the error's `code`, or `error`. */
  match<R>(handlers: MatchHandlers<T, E, R>): R;
}

export interface Success<T, E = never> extends OutcomeMethods<T, E> {
  readonly ok: true;
  readonly value: T;
  readonly error?: undefined;
}

export interface Failure<T, E = never> extends OutcomeMethods<T, E> {
  readonly ok: false;
  readonly value?: undefined;
  /** One of the pipeline's errors `E`, or anything the callback threw. */
  readonly error: E | unknown;
}

/**
 * The result of `pipeline.settle()`: a value or an error, never a throw. `E` is the union of
 * the errors the pipeline's strategies can raise.
 */
export type Outcome<T, E = never> = Success<T, E> | Failure<T, E>;

class OutcomeImpl<T, E> implements OutcomeMethods<T, E> {
  declare readonly ok: boolean;
  declare readonly value: T | undefined;
  declare readonly error: unknown;

  constructor(ok: boolean, value: T | undefined, error?: unknown) {
    this.ok = ok;
    this.value = value;
    this.error = error;
  }

  match<R>(handlers: MatchHandlers<T, E, R>): R {
    const error = this.error;
    const byCode = handlers as Record<string, ((error: unknown) => R) | undefined>;
    if (this.ok) return handlers.ok(this.value as T);
    return isResilienceError(error) && byCode[error.code]
      ? byCode[error.code]!(error)
      : handlers.error(error);
  }
}

export const Outcome = {
  success: <T, E = never>(value: T): Outcome<T, E> => new OutcomeImpl<T, E>(true, value) as Success<T, E>,
  failure: <T = never, E = never>(error: unknown): Outcome<T, E> =>
    new OutcomeImpl<T, E>(false, undefined, error) as Failure<T, E>,
  /** Throws the error of a failure, returns the value of a success. */
  unwrap<T>(outcome: Outcome<T, unknown>): T {
    if (outcome.ok) return outcome.value;
    throw outcome.error;
  },
};
