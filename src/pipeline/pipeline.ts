import { currentContext, runWithContext } from './ambient.ts';
import { ResilienceContext } from './context.ts';
import { Outcome } from './outcome.ts';
import type { Callback, Next, ResilienceStrategy } from './strategy.ts';

export interface ExecuteOptions {
  /** Aborts the execution: delays stop, the callback's `context.signal` aborts with this reason. */
  signal?: AbortSignal;
  /** A key for this execution, visible to strategies and the callback (`context.operationKey`). */
  operationKey?: string;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

// The innermost step. Not an async function: on the hot path it costs exactly one promise (the
// reaction to the callback's own promise), which matters because every promise is expensive while
// AsyncLocalStorage is enabled on Node 20.
const invokeCallback: Next = <T>(callback: Callback<T>, context: ResilienceContext) => {
  let result: T | PromiseLike<T>;
  try {
    result = runWithContext(context, callback);
  } catch (error) {
    return Promise.resolve(Outcome.failure<T>(error));
  }
  if (result instanceof Promise) {
    return (result as Promise<T>).then(Outcome.success<T, unknown>, Outcome.failure<T, unknown>);
  }
  if (isThenable(result)) {
    return Promise.resolve(result).then(Outcome.success<T, unknown>, Outcome.failure<T, unknown>);
  }
  return Promise.resolve(Outcome.success<T, unknown>(result));
};

function valueOrThrow<T>(outcome: Outcome<T, unknown>): T {
  if (outcome.ok) return outcome.value;
  throw outcome.error;
}

/**
 * Strategies composed in the order they were added (first = outermost), built by
 * `PipelineBuilder` or `ResiliencePipelineBuilder`. Safe to share and to run concurrently.
 *
 * `E` is the union of the errors the strategies can raise, for {@link settle} + `Outcome.match()`.
 *
 * An execution started inside another execution's callback sees the outer one's properties
 * (reads fall back to them), so `getLockToken()` works inside a nested pipeline too.
 */
export class ResiliencePipeline<E = never> {
  readonly #run: Next;

  /** @internal Use a builder. */
  constructor(strategies: readonly ResilienceStrategy[]) {
    let next = invokeCallback;
    for (let index = strategies.length - 1; index >= 0; index--) {
      const strategy = strategies[index]!;
      const inner = next;
      next = (callback, context) => strategy.execute(callback, context, inner);
    }
    this.#run = next;
  }

  /**
   * Runs `callback` through the pipeline and returns its value, or throws the final error: one of
   * the pipeline's errors `E` or whatever the callback threw. When `options.signal` is already
   * aborted, the callback never runs and its reason is thrown.
   *
   * @example
   * const body = await pipeline.execute(({ signal }) => fetch(url, { signal }).then((r) => r.text()));
   */
  execute<T>(callback: Callback<T>, options?: ExecuteOptions): Promise<T> {
    return this.#start(callback, options).then(valueOrThrow<T>);
  }

  /**
   * Like {@link execute}, but never throws: resolves to an {@link Outcome}.
   *
   * @example
   * const message = (await pipeline.settle(work)).match({
   *   ok: (value) => `done: ${value}`,
   *   TIMEOUT: (error) => `gave up after ${error.timeout} ms`,
   *   error: (error) => `failed: ${String(error)}`,
   * });
   */
  settle<T>(callback: Callback<T>, options?: ExecuteOptions): Promise<Outcome<T, E>> {
    // Strategies resolve to outcomes; the catch is for one that breaks that rule.
    return this.#start(callback, options).catch(Outcome.failure<T, unknown>) as Promise<Outcome<T, E>>;
  }

  #start<T>(callback: Callback<T>, options: ExecuteOptions | undefined): Promise<Outcome<T, unknown>> {
    const signal = options?.signal;
    if (signal?.aborted) return Promise.resolve(Outcome.failure<T>(signal.reason));
    const context = new ResilienceContext({ signal, operationKey: options?.operationKey }, currentContext());
    return this.#run(callback, context);
  }
}
