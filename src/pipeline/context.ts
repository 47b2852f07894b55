import { ResilienceProperties } from './properties.ts';
import { neverAbortedSignal } from './time.ts';

/** Produces a signal on first use, so strategies pay for an AbortController only when read. */
export interface SignalSource {
  readonly signal: AbortSignal;
}

/**
 * What a callback and every strategy see of one execution: the signal to honour, the
 * operation key and typed properties. Strategies that need their own signal (timeout, lock)
 * run their inner part with a derived context.
 */
export class ResilienceContext {
  /** Optional key the caller gave this execution (for logs, lock keys, ...). */
  readonly operationKey: string | undefined;
  /** Typed values carried through the execution. */
  readonly properties: ResilienceProperties;
  #signal: AbortSignal | undefined;
  readonly #signalSource: SignalSource | undefined;

  constructor(
    options: {
      signal?: AbortSignal | SignalSource;
      operationKey?: string;
      properties?: ResilienceProperties;
    } = {},
  ) {
    const signal = options.signal ?? neverAbortedSignal;
    if (isAbortSignal(signal)) this.#signal = signal;
    else this.#signalSource = signal;
    this.operationKey = options.operationKey;
    this.properties = options.properties ?? new ResilienceProperties();
  }

  /** Aborted when the caller aborts, or a strategy (timeout, lost lock) cancels the callback. */
  get signal(): AbortSignal {
    this.#signal ??= this.#signalSource!.signal;
    return this.#signal;
  }

  /**
   * A child context for an inner part of the pipeline: same operation key, properties that
   * inherit from this context's, and `signal` instead of this context's signal.
   */
  derive(signal: AbortSignal | SignalSource): ResilienceContext {
    return new ResilienceContext({
      signal,
      operationKey: this.operationKey,
      properties: new ResilienceProperties(this.properties),
    });
  }
}

function isAbortSignal(value: AbortSignal | SignalSource): value is AbortSignal {
  return typeof (value as AbortSignal).addEventListener === 'function';
}

/**
 * A signal derived from a parent context's: aborted when the parent aborts (with the parent's
 * reason) or when `abort()` is called. Neither the parent's signal nor an AbortController is
 * created until someone reads `signal`; `dispose()` removes the parent listener.
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
    const parent = this.#parent.signal;
    if (this.#aborted) controller.abort(this.#reason);
    else if (parent.aborted) controller.abort(parent.reason);
    else if (parent !== neverAbortedSignal) {
      this.#parentSignal = parent;
      this.#onParentAbort = () => controller.abort(parent.reason);
      parent.addEventListener('abort', this.#onParentAbort, { once: true });
    }
    return controller.signal;
  }

  /** Aborts the derived signal with `reason`, unless it already aborted. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  /** Detaches from the parent. Call when the derived scope ends. */
  dispose(): void {
    if (this.#onParentAbort) {
      this.#parentSignal!.removeEventListener('abort', this.#onParentAbort);
      this.#onParentAbort = undefined;
    }
  }
}
