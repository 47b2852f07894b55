import { ambientSlot } from './ambient.ts';
import { ResilienceContext } from './context.ts';
import { Outcome } from './outcome.ts';
import type { ResilienceProperties } from './properties.ts';
import type { Callback, Next, ResilienceStrategy } from './strategy.ts';

export interface ExecuteOptions {
  /** Aborts the execution: delays stop, the callback's `context.signal` aborts with this reason. */
  signal?: AbortSignal;
  /** A key for this execution, visible to strategies and the callback (`context.operationKey`). */
  operationKey?: string;
  /**
   * The execution's initial properties (`context.properties`), as Polly's `ResilienceContext`
   * carries them in. Defaults to an empty bag that falls back to an enclosing execution's.
   */
  properties?: ResilienceProperties;
}

/**
 * @internal The callback's result as a promise: run in the ambient context when the context is
 * marked so, a synchronous throw as a rejection. For the usual async callback, its own promise.
 */
export function callbackResult<T>(callback: Callback<T>, context: ResilienceContext): Promise<T> {
  try {
    // Entered only when something reads it: the first AsyncLocalStorage.run() turns on promise
    // hooks for the whole process on Node 20, and every `await` of the host pays for them.
    return Promise.resolve(
      context.ambient ? ambientSlot.run!(context, callback) : callback(context),
    ) as Promise<T>;
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * @internal The innermost step: the `next` of the innermost strategy. Not an async function: for
 * the usual async callback it costs exactly one promise (the reaction to the callback's own
 * promise). A strategy that sees it as its `next` may call the callback through
 * {@link callbackResult} itself and save a reaction (retry does).
 */
export const invokeCallback: Next = <T>(callback: Callback<T>, context: ResilienceContext) =>
  callbackResult(callback, context).then(Outcome.success<T, unknown>, Outcome.failure<T, unknown>);

/**
 * Strategies composed in the order they were added (first = outermost), built by
 * `PipelineBuilder` or `ResiliencePipelineBuilder`. Safe to share and to run concurrently.
 *
 * `E` is the union of the errors the strategies can raise, for {@link settle} + `Outcome.match()`.
 *
 * The ambient context (`currentContext()`, `getLockToken()` without an argument) is entered only by
 * executions of a pipeline with a strategy that reads it (a lock, see
 * `ResilienceStrategy.usesAmbientContext`), and by every execution started inside one: those see
 * their own context there, and the outer execution's properties (reads fall back to them), so
 * `getLockToken()` works inside a nested pipeline too. Other executions leave the process's
 * promises untouched.
 */
export class ResiliencePipeline<E = never> {
  readonly #run: Next;
  readonly #usesAmbientContext: boolean;

  /** @internal Use a builder. */
  constructor(strategies: readonly ResilienceStrategy[]) {
    this.#run = strategies.reduceRight<Next>(
      (inner, strategy) => (callback, context) => strategy.execute(callback, context, inner),
      invokeCallback,
    );
    this.#usesAmbientContext = strategies.some((strategy) => strategy.usesAmbientContext === true);
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
    return this.#start(callback, options).then(Outcome.unwrap<T>);
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
    const outer = ambientSlot.get?.();
    // The slot is filled by what reads the ambient context (the lock strategy, a job's lease,
    // loading currentContext()): checked per execution, since another copy may fill it later.
    const ambient = outer !== undefined || (this.#usesAmbientContext && ambientSlot.run !== undefined);
    return this.#run(callback, new ResilienceContext(options, outer, ambient));
  }
}
