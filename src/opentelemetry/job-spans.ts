import { type Attributes, type Exception, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { describeError, redactCredentials } from '../scheduler/credentials.ts';
import type { FinishedEvent, SchedulerEvent } from '../scheduler/events.ts';
import { errorType } from './pipeline-metrics.ts';

/**
 * A scheduler listener that makes one span per job run (`resil.job <name>`) once the run ended:
 * from its start (scheduledAt + lateMs, by the store's clock) to its end (start + durationMs).
 * Skipped fires are not runs and get no span.
 */
export function jobSpans(tracer: Tracer): (event: SchedulerEvent) => void {
  return (event) => {
    if (event.type === 'succeeded' || event.type === 'failed') recordRun(tracer, event);
  };
}

function recordRun(tracer: Tracer, event: FinishedEvent): void {
  const startedAt = event.scheduledAt.getTime() + (event.lateMs ?? 0);
  // Dates, not numbers: OpenTelemetry reads a small number as a performance.now() reading.
  const startTime = new Date(startedAt);
  const endTime = new Date(startedAt + event.durationMs);
  const attributes: Attributes = {
    'resil.job': event.job,
    'resil.scheduled_at': event.scheduledAt.toISOString(),
    'resil.outcome': event.type === 'succeeded' ? 'success' : 'failure',
    'resil.instance': event.instance,
    'resil.kind': event.kind,
    'resil.attempts': event.attempts,
  };
  if (event.token !== undefined) attributes['resil.token'] = event.token;
  if (event.takeover) attributes['resil.takeover'] = true;
  if (event.fenceRejected) attributes['resil.fence_rejected'] = true;
  const span = tracer.startSpan(`resil.job ${event.job}`, { startTime, attributes });
  if (event.type === 'failed') {
    span.setAttribute('error.type', errorType(event.error));
    span.recordException(exceptionOf(event.error), endTime);
    span.setStatus({ code: SpanStatusCode.ERROR, message: describeError(event.error) });
  }
  span.end(endTime);
}

/** The error as a span's exception event, with no URL password in its message or stack. */
function exceptionOf(error: unknown): Exception {
  if (!(error instanceof Error)) return describeError(error);
  const exception: Exception = { name: error.name, message: redactCredentials(error.message) };
  if (error.stack !== undefined) exception.stack = redactCredentials(error.stack);
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') exception.code = code;
  return exception;
}
