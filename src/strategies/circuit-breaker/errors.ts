import { formatDuration } from '../../pipeline/duration.ts';
import { errorGuard, ResilienceError } from '../../pipeline/errors.ts';

/**
 * The circuit is open (or half-open with its probe already running): the callback did not run.
 * `cause` is the error that broke the circuit, when it broke on an error.
 */
export class BrokenCircuitError extends ResilienceError {
  readonly code = 'CIRCUIT_OPEN';
  constructor(
    /** Milliseconds until the circuit lets a probe execution through. */
    readonly retryAfter: number,
    options?: { cause?: unknown },
  ) {
    super(
      `The circuit is open and is not allowing calls. It can be retried after ${formatDuration(retryAfter)}.`,
      options,
    );
    this.name = 'BrokenCircuitError';
  }

  override isRejection(): boolean {
    return true;
  }
}

/** The circuit was isolated (held open) with `CircuitBreakerManualControl.isolate()`: the callback did not run. */
export class IsolatedCircuitError extends ResilienceError {
  readonly code = 'CIRCUIT_ISOLATED';
  constructor() {
    super('The circuit is manually held open and is not allowing calls.');
    this.name = 'IsolatedCircuitError';
  }

  override isRejection(): boolean {
    return true;
  }
}

export const isBrokenCircuitError = errorGuard<BrokenCircuitError>('CIRCUIT_OPEN');
export const isIsolatedCircuitError = errorGuard<IsolatedCircuitError>('CIRCUIT_ISOLATED');
