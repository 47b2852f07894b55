import { ResilienceContext } from '../../pipeline/context.ts';
import type { Outcome } from '../../pipeline/outcome.ts';
import type { CircuitController } from './controller.ts';
import type { CircuitState } from './options.ts';

/** @internal Connects a built breaker to its control; not part of the public API. */
export const attach = Symbol('resil.circuitBreaker.attach');

/**
 * Isolates (holds open) and closes circuit breakers by hand, e.g. from an admin endpoint or while
 * a dependency is under maintenance. One control may serve several breakers; a breaker built while
 * the control is isolated starts isolated.
 *
 * @example
 * const manualControl = new CircuitBreakerManualControl();
 * const pipeline = new ResiliencePipelineBuilder().addCircuitBreaker({ manualControl }).build();
 * await manualControl.isolate(); // every execution now fails with IsolatedCircuitError
 * await manualControl.close();   // closed again, statistics reset
 */
export class CircuitBreakerManualControl {
  #isolated: boolean;
  // Weak, so a control that outlives the pipelines it served does not keep their breakers alive.
  readonly #controllers = new Set<WeakRef<CircuitController>>();

  /** @param isolated start (and build every breaker) isolated. Defaults to false. */
  constructor(isolated = false) {
    this.#isolated = isolated;
  }

  /** True between {@link isolate} and {@link close}. */
  get isolated(): boolean {
    return this.#isolated;
  }

  /**
   * Opens every attached circuit and holds it open until {@link close}: executions fail with
   * `IsolatedCircuitError`. Resolves once every `onOpened` call has finished.
   */
  async isolate(): Promise<void> {
    this.#isolated = true;
    const context = new ResilienceContext();
    for (const controller of this.#live()) await controller.isolate(context);
  }

  /** Closes every attached circuit and resets its statistics. Resolves once every `onClosed` call has finished. */
  async close(): Promise<void> {
    this.#isolated = false;
    const context = new ResilienceContext();
    for (const controller of this.#live()) await controller.close(context);
  }

  /** @internal */
  [attach](controller: CircuitController): void {
    this.#controllers.add(new WeakRef(controller));
    if (this.#isolated) {
      // build() is synchronous: the state changes now; a failing onOpened has no caller to reach.
      controller.isolate(new ResilienceContext()).catch(() => {});
    }
  }

  *#live(): Generator<CircuitController> {
    for (const reference of this.#controllers) {
      const controller = reference.deref();
      if (controller) yield controller;
      else this.#controllers.delete(reference);
    }
  }
}

/**
 * Reads a circuit breaker's state, e.g. for a health check. Attach it to one breaker with the
 * `stateProvider` option; until then it reports `closed`.
 *
 * @example
 * const stateProvider = new CircuitBreakerStateProvider();
 * const pipeline = new ResiliencePipelineBuilder().addCircuitBreaker({ stateProvider }).build();
 * app.get('/health', () => (stateProvider.circuitState === 'closed' ? 200 : 503));
 */
export class CircuitBreakerStateProvider {
  #controller: CircuitController | undefined;

  /** True once attached to a breaker (by `build()`). */
  get isAttached(): boolean {
    return this.#controller !== undefined;
  }

  /**
   * The circuit's state. Like Polly v8, an open circuit reads `open` until the first execution
   * after its break duration turns it half-open.
   */
  get circuitState(): CircuitState {
    return this.#controller?.state ?? 'closed';
  }

  /** The last outcome counted as a failure since the circuit last closed, if any. */
  get lastHandledOutcome(): Outcome<unknown, unknown> | undefined {
    return this.#controller?.lastHandledOutcome;
  }

  /** @internal */
  [attach](controller: CircuitController): void {
    this.#controller = controller;
  }
}
