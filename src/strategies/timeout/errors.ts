import { formatDuration } from '../../pipeline/duration.ts';
import { errorGuard, ResilienceError } from '../../pipeline/errors.ts';

/**
 * The timeout strategy's own timer elapsed and the callback then failed (typically because it
 * honoured the aborted signal). The callback ran, so this is not a rejection.
 */
export class TimeoutRejectedError extends ResilienceError {
  readonly code = 'TIMEOUT';
  constructor(
    /** The timeout that elapsed, in milliseconds. */
    readonly timeout: number,
    options?: { cause?: unknown },
  ) {
    super(`The operation did not complete within the timeout of ${formatDuration(timeout)}.`, options);
    this.name = 'TimeoutRejectedError';
  }
}

export const isTimeoutRejectedError = errorGuard<TimeoutRejectedError>('TIMEOUT');
