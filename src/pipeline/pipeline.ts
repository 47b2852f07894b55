import { runWithContext } from './ambient.ts';
import { ResilienceContext } from './context.ts';
import { Outcome } from './outcome.ts';
import type { Callback, Next, ResilienceStrategy } from './strategy.ts';

export interface ExecuteOptions {
  /** Aborts the execution: delays stop, the callback's `context.signal` aborts with this reason. */
  signal?: AbortSignal;
  /** A key for this execution, visible to strategies and the callback (`context.operationKey`). */
  operationKey?: string;
}

const invokeCallback: Next = async (callback, context) => {
  try {
    return Outcome.success(await runWithContext(context, callback));
  } catch (error) {
    return Outcome.failure(error);
  }
};

/**
 * Strategies composed in the order they were added (first = outermost), built by
 * `PipelineBuilder` or `ResiliencePipelineBuilder`. Safe to share and to run concurrently.
 *
 * `E` is the union of the errors the strategies can raise, for {@link settle} + `Outcome.match()`.
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
   * the pipeline's errors `E` or whatever the callback threw.
   *
   * @example
   * const body = await pipeline.execute(({ signal }) => fetch(url, { signal }).then((r) => r.text()));
   */
  async execute<T>(callback: Callback<T>, options?: ExecuteOptions): Promise<T> {
    const outcome = await this.settle(callback, options);
    if (outcome.ok) return outcome.value;
    throw outcome.error;
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
    const signal = options?.signal;
    if (signal?.aborted) return Promise.resolve(Outcome.failure(signal.reason));
    const context = new ResilienceContext({ signal, operationKey: options?.operationKey });
    // A throwing option callback (shouldHandle, onRetry, ...) still settles.
    return this.#run(callback, context).catch(Outcome.failure) as Promise<Outcome<T, E>>;
  }
}
