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
  // One attributes object per strategy and event (and per error type), made on first use: events
  // can come with every call.
  // Keyed by strategy, then event: no key string is built per event.
  const eventAttributes = new Map<string, Map<string, Attributes>>();
  const failureAttributes = new Map<string, Attributes>();
  const listener = (event: TelemetryEvent) => {
    let ofStrategy = eventAttributes.get(event.strategy);
    if (ofStrategy === undefined) {
      ofStrategy = new Map();
      eventAttributes.set(event.strategy, ofStrategy);
    }
    let attributes = ofStrategy.get(event.event);
    if (attributes === undefined) {
      attributes = { event: event.event, strategy: event.strategy, ...named };
      ofStrategy.set(event.event, attributes);
    }
    instruments.events.add(1, attributes);
  };
  const failure = (error: unknown): Attributes => {
    const type = errorType(error);
    let attributes = failureAttributes.get(type);
    if (attributes === undefined) {
      attributes = { ...named, outcome: 'failure', 'error.type': type };
      failureAttributes.set(type, attributes);
    }
    return attributes;
  };
  return Object.assign(listener, {
    onPipelineExecuted({ duration, outcome }: PipelineExecutedEvent) {
      instruments.duration.record(duration, outcome.ok ? success : failure(outcome.error));
    },
  });
}
