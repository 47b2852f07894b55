import { formatDuration } from '../../pipeline/duration.ts';
import { errorGuard, ResilienceError } from '../../pipeline/errors.ts';

/** The rate limit was reached and the queue was full. A rejection: the callback never ran. */
export class RateLimiterRejectedError extends ResilienceError {
  readonly code = 'RATE_LIMITED';
  constructor(
    /** Milliseconds until a permit is expected to be free for a new request, when the limiter knows. */
    readonly retryAfter?: number,
  ) {
    super(
      `Rate limit reached${retryAfter === undefined ? '' : `: retry after ${formatDuration(Math.ceil(retryAfter))}`}.`,
    );
    this.name = 'RateLimiterRejectedError';
  }
  override isRejection(): boolean {
    return true;
  }
}

export const isRateLimiterRejectedError = errorGuard<RateLimiterRejectedError>('RATE_LIMITED');
