import { ResilienceProperties } from './properties.ts';
import { neverAbortedSignal } from './time.ts';

/** Produces a signal on first use, so strategies pay for an AbortController only when read. */
export interface SignalSource {
  readonly signal: AbortSignal;
}

export interface ResilienceContextOptions {
  /** The signal the callback honours, or a source that makes it on first read. Defaults to one that never aborts. */
  signal?: AbortSignal | SignalSource;
  /** Optional key the caller gave this execution (for logs, lock keys, ...). */
  operationKey?: string;
  /** The property bag to use. Defaults to a new, empty one. */
  properties?: ResilienceProperties;
}

/**
 * What a callback and every strategy see of one execution: the signal to honour, the
 * operation key and typed properties. Strategies that need their own signal (timeout, lock)
 * run their inner part with a derived context.
 *
 * @example
 * await pipeline.execute(async (context) => {
 *   const response = await fetch(url, { signal: context.signal });
 *   context.properties.set(STATUS, response.status);
 * }, { operationKey: 'fetch-prices' });
 */
export class ResilienceContext {
  /** Optional key the caller gave this execution (for logs, lock keys, ...). */
  declare readonly operationKey: string | undefined;
  /**
   * @internal True when the execution's callback runs in the ambient context (`currentContext()`):
   * its pipeline has a strategy that reads it (a lock), or it started inside such an execution.
   */
  declare readonly ambient: boolean;
  // The signal, or until first read the source that makes it.
  #signal: AbortSignal | SignalSource;
  #properties: ResilienceProperties | undefined;
  // Most executions never touch properties: the bag is made on first read, inheriting from here.
  readonly #inheritFrom: ResilienceContext | undefined;

  /**
   * @param inheritFrom internal: the context whose properties this one's fall back to.
   * @param ambient internal: see {@link ambient}.
   */
  constructor(options: ResilienceContextOptions = {}, inheritFrom?: ResilienceContext, ambient = false) {
    this.#signal = options.signal ?? neverAbortedSignal;
    this.operationKey = options.operationKey;
    this.ambient = ambient;
    this.#properties = options.properties;
    this.#inheritFrom = inheritFrom;
  }

  /** Aborted when the caller aborts, or a strategy (timeout, lost lock) cancels the callback. */
  get signal(): AbortSignal {
    // A SignalSource has `signal`; an AbortSignal has none.
    if ('signal' in this.#signal) this.#signal = this.#signal.signal;
    return this.#signal;
  }

  /** Typed values carried through the execution (see `ResiliencePropertyKey`). */
  get properties(): ResilienceProperties {
    this.#properties ??= new ResilienceProperties(this.#inheritFrom?.properties);
    return this.#properties;
  }

  /**
   * A child context for an inner part of the pipeline: same operation key, properties that
   * inherit from this context's, and `signal` instead of this context's signal.
   */
  derive(signal: AbortSignal | SignalSource): ResilienceContext {
    return new ResilienceContext({ signal, operationKey: this.operationKey }, this, this.ambient);
  }
}

/**
 * A signal derived from a parent context's: aborted when the parent aborts (with the parent's
 * reason) or when `abort()` is called, whichever comes first. Neither the parent's signal nor an
 * AbortController is created until someone reads `signal`; `dispose()` removes the parent listener.
 */
export class DerivedSignal implements SignalSource {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;
  readonly #parent: SignalSource;
  #parentSignal: AbortSignal | undefined;
  #onParentAbort: (() => void) | undefined;

  constructor(parent: SignalSource) {
    this.#parent = parent;
  }

  get signal(): AbortSignal {
    if (this.#controller) return this.#controller.signal;
    const controller = new AbortController();
    this.#controller = controller;
    if (this.#aborted) {
      controller.abort(this.#reason);
      return controller.signal;
    }
    const parent = this.#parent.signal;
    if (parent.aborted) controller.abort(parent.reason);
    else if (parent !== neverAbortedSignal) {
      this.#parentSignal = parent;
      this.#onParentAbort = () => controller.abort(parent.reason);
      parent.addEventListener('abort', this.#onParentAbort, { once: true });
    }
    return controller.signal;
  }

  /** True once `abort()` was called or the parent aborted. */
  get aborted(): boolean {
    if (this.#controller) return this.#controller.signal.aborted;
    return this.#aborted || this.#parent.signal.aborted;
  }

  /** Aborts the derived signal with `reason`, unless it (or its parent) already aborted. */
  abort(reason: unknown): void {
    if (this.#controller) {
      this.#controller.abort(reason);
      return;
    }
    if (this.#aborted || this.#parent.signal.aborted) return;
    this.#aborted = true;
    this.#reason = reason;
  }

  /** Detaches from the parent. Call when the derived scope ends. */
  dispose(): void {
    if (this.#onParentAbort) {
      this.#parentSignal!.removeEventListener('abort', this.#onParentAbort);
      this.#onParentAbort = undefined;
      this.#parentSignal = undefined;
    }
  }
}
