import { describeError } from './credentials.ts';
import { isShutdownError } from './errors.ts';
import type { SchedulerEvent, SchedulerListener } from './events.ts';
import type { SchedulerLogger } from './fire.ts';

const injectedWhat = { fault: 'a fault', latency: 'latency', outcome: 'an outcome', behavior: 'a behavior' };

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/**
 * The scheduler's events as log lines: one line per fire (job, scheduledAt, outcome, reason, token,
 * attempt, durationMs, lateMs, kind, takeover), plus warnings for retries, timeouts, lost leases,
 * store errors and chaos injections, and the job's start at debug. `resil run` and `resil jobs run` subscribe it.
 *
 * @example
 * scheduler.on(logSchedulerEvents(logger));
 */
export function logSchedulerEvents(logger: SchedulerLogger): SchedulerListener {
  const perJob = new Map<string, SchedulerLogger>();
  return (event: SchedulerEvent) => {
    let log = perJob.get(event.job);
    if (log === undefined) {
      log = logger.child({ job: event.job });
      perJob.set(event.job, log);
    }
    const scheduledAt = event.scheduledAt.toISOString();
    switch (event.type) {
      case 'started':
        log.debug({ scheduledAt, token: event.token }, 'job started');
        return;
      case 'retrying':
        log.warn(
          { scheduledAt, attempt: event.attempt, retryDelayMs: event.delayMs, err: event.error },
          'attempt failed, retrying',
        );
        return;
      case 'timed-out':
        log.warn(
          { scheduledAt, attempt: event.attempt, timeoutMs: event.timeoutMs },
          'attempt timed out: its signal is aborted',
        );
        return;
      case 'lock-lost':
        log.warn({ scheduledAt, key: event.key }, 'lease lost while the job ran: its signal is aborted');
        return;
      case 'store-error':
        log.warn({ scheduledAt, err: event.error }, 'lock store call failed');
        return;
      case 'finish-failed':
        log.warn(
          { scheduledAt, token: event.token, error: describeError(event.error) },
          'the run finished but the run ledger could not record it: another instance may run it again once its lease expires',
        );
        return;
      case 'chaos-injected': {
        const fields: Record<string, unknown> = { scheduledAt, attempt: event.attempt, chaos: event.chaos };
        if (event.latencyMs !== undefined) fields.latencyMs = event.latencyMs;
        if (event.error !== undefined) fields.err = event.error;
        log.warn(
          fields,
          `chaos: injected ${injectedWhat[event.chaos]} into this attempt (the job's chaos option)`,
        );
        return;
      }
      case 'stray-error':
        log.warn(
          { scheduledAt, origin: event.origin, err: event.error },
          'an error escaped the job after its attempt ended: the recorded outcome stands',
        );
        return;
      default:
        logFire(log, event, scheduledAt);
    }
  };
}

function logFire(
  log: SchedulerLogger,
  event: Extract<SchedulerEvent, { type: 'succeeded' | 'failed' | 'skipped' }>,
  scheduledAt: string,
): void {
  const outcome = event.type === 'succeeded' ? 'success' : event.type === 'failed' ? 'failure' : 'skipped';
  const fields: Record<string, unknown> = { scheduledAt, outcome, durationMs: round(event.durationMs) };
  if (event.type === 'skipped') fields.reason = event.reason;
  else {
    if (event.token !== undefined) fields.token = event.token;
    if (event.attempts > 0) fields.attempt = event.attempts;
  }
  if (event.lateMs !== undefined) fields.lateMs = round(event.lateMs);
  if (event.kind !== 'scheduled') fields.kind = event.kind;
  if (event.type !== 'skipped' && event.takeover) fields.takeover = true;
  if (event.type === 'failed' && isShutdownError(event.error)) {
    // Aborted on purpose (Ctrl-C, shutdown): the reason, not a stack from inside resil.
    log.warn({ ...fields, error: event.error.message }, 'job aborted');
  } else if (event.type === 'failed') {
    log.error({ ...fields, err: event.error }, 'job failed');
  } else if (event.type === 'succeeded') {
    log.info(fields, 'job succeeded');
  } else if (event.type === 'skipped' && event.reason === 'store-unavailable') {
    log.warn({ ...fields, error: describeError(event.error) }, 'fire skipped: store unavailable');
  } else if (event.type === 'skipped' && event.reason === 'store-setup') {
    // Not an outage that passes: the error says what someone has to do.
    const error = describeError(event.error);
    log.error({ ...fields, error }, `fire skipped: the store is not set up: ${error}`);
  } else {
    log.info(fields, `fire skipped: ${fields.reason}`);
  }
}
