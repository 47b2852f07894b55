import { type Meter, metrics, type Tracer, trace } from '@opentelemetry/api';
import { checkFunction, checkOption } from '../pipeline/errors.ts';
import type { PipelineExecutedEvent, TelemetryListener } from '../pipeline/strategy.ts';
import type { SchedulerEvent } from '../scheduler/events.ts';
import type { SchedulerTelemetry } from '../scheduler/job.ts';
import { jobSpans } from './job-spans.ts';
import { meteredListener, pipelineInstruments } from './pipeline-metrics.ts';

/** The instrumentation scope of the default tracer and meter. */
const scope = 'resil';

export interface OpenTelemetryOptions {
  /**
   * Makes the spans of job runs. Defaults to `trace.getTracer('resil')`, the global tracer
   * provider's (a no-op until an SDK registers one).
   */
  tracer?: Tracer;
  /**
   * Makes the instruments. Defaults to `metrics.getMeter('resil')`, the global meter provider's at
   * the time of the call: register the SDK before calling `openTelemetry()`, or pass `meter`.
   */
  meter?: Meter;
  /**
   * The `pipeline` attribute of this listener's measurements. Defaults to none (no attribute). In a
   * config, each job's pipeline is named after the job.
   */
  pipeline?: string;
  /**
   * Exports what the SDK still buffers, e.g. `() => sdk.shutdown()` or
   * `() => tracerProvider.forceFlush()`: the `resil` CLI calls the config's `telemetry.flush()`
   * before it exits (at most 5 s), so a batching processor loses no span. Defaults to none.
   */
  flush?: () => void | Promise<void>;
}

/**
 * A pipeline's telemetry listener that also fits the config's `telemetry` (see
 * {@link openTelemetry}).
 */
export interface OpenTelemetryListener
  extends TelemetryListener,
    Required<Pick<SchedulerTelemetry, 'pipelineListener' | 'onSchedulerEvent'>> {
  /** Records the execution in `resil.pipeline.duration`. */
  onPipelineExecuted(event: PipelineExecutedEvent): void;
  /**
   * A listener for the pipeline named `pipeline`, sharing this one's instruments and tracer: for a
   * second pipeline, and what the scheduler asks for each job.
   */
  pipelineListener(pipeline: string): OpenTelemetryListener;
  /** Turns each finished job run into a span `resil.job <name>`. */
  onSchedulerEvent(event: SchedulerEvent): void;
  /** The `flush` option's function, or nothing to do without one. */
  flush(): Promise<void>;
}

function checkMethods(option: string, value: unknown, methods: readonly string[], expected: string): void {
  checkOption(
    option,
    value,
    value === undefined ||
      (typeof value === 'object' &&
        value !== null &&
        methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function')),
    expected,
  );
}

function checkPipelineName(option: string, pipeline: unknown): void {
  checkOption(
    option,
    pipeline,
    pipeline === undefined || (typeof pipeline === 'string' && pipeline !== ''),
    'a non-empty string',
  );
}

/**
 * Metrics and traces through the OpenTelemetry API (`@opentelemetry/api`, a peer dependency):
 * - on any pipeline (`new PipelineBuilder({ telemetry: openTelemetry() })`), the counter
 *   `resil.strategy.events` (attributes `event`, `strategy`, `pipeline`) and the histogram
 *   `resil.pipeline.duration` in ms (attributes `pipeline`, `outcome`, `error.type` on failures);
 * - as the config's `telemetry`, the same for every job's pipeline (`pipeline` is the job's name),
 *   and one span per job run, `resil.job <name>`, with `resil.job`, `resil.scheduled_at`,
 *   `resil.token`, `resil.outcome`, `resil.instance` (and `resil.kind`, `resil.attempts`), its
 *   status an error when the run failed.
 *
 * @example
 * import { openTelemetry } from 'resil/opentelemetry';
 * const pipeline = new ResiliencePipelineBuilder({ telemetry: openTelemetry({ meter, pipeline: 'payments' }) })
 *   .addRetry({ maxRetryAttempts: 3 })
 *   .build();
 * export default defineConfig({ telemetry: openTelemetry({ tracer, meter }), jobs });
 */
export function openTelemetry(options: OpenTelemetryOptions = {}): OpenTelemetryListener {
  checkOption('options', options, typeof options === 'object' && options !== null, 'an options object');
  const { tracer, meter, pipeline, flush } = options;
  checkFunction('flush', flush);
  checkMethods('tracer', tracer, ['startSpan'], 'an OpenTelemetry Tracer (startSpan)');
  checkMethods(
    'meter',
    meter,
    ['createCounter', 'createHistogram'],
    'an OpenTelemetry Meter (createCounter, createHistogram)',
  );
  checkPipelineName('pipeline', pipeline);
  const instruments = pipelineInstruments(meter ?? metrics.getMeter(scope));
  const onSchedulerEvent = jobSpans(tracer ?? trace.getTracer(scope));
  const listenerFor = (name: string | undefined): OpenTelemetryListener =>
    Object.assign(meteredListener(instruments, name), {
      pipelineListener(other: string) {
        checkPipelineName('pipelineListener(pipeline)', other);
        return listenerFor(other);
      },
      onSchedulerEvent,
      async flush() {
        await flush?.();
      },
    });
  return listenerFor(pipeline);
}
