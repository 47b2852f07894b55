import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import type { PipelineExecutedEvent, TelemetryEvent, TelemetryListener } from '../pipeline/strategy.ts';

/** The instruments every listener of one `openTelemetry()` shares. */
export interface PipelineInstruments {
  /** `resil.strategy.events`: one per strategy event, by `event`, `strategy` and `pipeline`. */
  readonly events: Counter;
  /** `resil.pipeline.duration`: one per execution, ms, by `pipeline`, `outcome` and `error.type`. */
  readonly duration: Histogram;
}

export function pipelineInstruments(meter: Meter): PipelineInstruments {
  return {
    events: meter.createCounter('resil.strategy.events', {
      description:
        'Events raised by the strategies of resil pipelines (OnRetry, OnTimeout, OnCircuitOpened, ...)',
      unit: '{event}',
    }),
    duration: meter.createHistogram('resil.pipeline.duration', {
      description: 'Duration of resil pipeline executions, every strategy and attempt included',
      unit: 'ms',
    }),
  };
}

/**
 * A low-cardinality name for an error, as OpenTelemetry's `error.type`: a string `code` (resil's
 * `TIMEOUT`, Node's `ECONNREFUSED`), else the error's `name`, else its type.
 */
export function errorType(error: unknown): string {
  const { code, name } = (typeof error === 'object' && error !== null ? error : {}) as {
    code?: unknown;
    name?: unknown;
  };
  if (typeof code === 'string' && code !== '') return code;
  if (typeof name === 'string' && name !== '') return name;
  return error === null ? 'null' : typeof error;
}

/** A pipeline listener that counts strategy events and measures executions into `instruments`. */
export function meteredListener(
  instruments: PipelineInstruments,
  pipeline: string | undefined,
): TelemetryListener & { onPipelineExecuted(event: PipelineExecutedEvent): void } {
  const named: Attributes = pipeline === undefined ? {} : { pipeline };
  // Every execution records one; a success's attributes are always the same object.
  const success: Attributes = { ...named, outcome: 'success' };
  const listener = (event: TelemetryEvent) => {
    instruments.events.add(1, { event: event.event, strategy: event.strategy, ...named });
  };
  return Object.assign(listener, {
    onPipelineExecuted({ duration, outcome }: PipelineExecutedEvent) {
      instruments.duration.record(
        duration,
        outcome.ok ? success : { ...named, outcome: 'failure', 'error.type': errorType(outcome.error) },
      );
    },
  });
}
