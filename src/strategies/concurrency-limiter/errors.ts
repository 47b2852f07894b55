import { errorGuard, ResilienceError } from '../../pipeline/errors.ts';

/**
 * `permitLimit` executions were running and the queue was full. A rejection: the callback never ran.
 */
export class ConcurrencyLimiterRejectedError extends ResilienceError {
  readonly code = 'CONCURRENCY_LIMITED';
  constructor(
    readonly permitLimit: number,
    readonly queueLimit: number,
  ) {
    super(`Concurrency limit reached: ${permitLimit} running, ${queueLimit} queued.`);
    this.name = 'ConcurrencyLimiterRejectedError';
  }
  override isRejection(): boolean {
    return true;
  }
}

export const isConcurrencyLimiterRejectedError =
  errorGuard<ConcurrencyLimiterRejectedError>('CONCURRENCY_LIMITED');
