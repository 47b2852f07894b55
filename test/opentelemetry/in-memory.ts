/**
 * The OpenTelemetry SDK with in-memory exporters, for asserting what resil/opentelemetry records:
 * a MeterProvider whose reader exports to an InMemoryMetricExporter when asked (no timer fires
 * during a test), and a BasicTracerProvider exporting every ended span to an InMemorySpanExporter.
 */
import type { Attributes } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  type Histogram,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

export interface InMemoryOpenTelemetry {
  readonly meterProvider: MeterProvider;
  readonly tracerProvider: BasicTracerProvider;
  /** Every metric recorded so far, cumulative. */
  metrics(): Promise<MetricData[]>;
  /** `name`'s data points, as `[attributes, value]`: a number for a counter, the histogram otherwise. */
  points(name: string): Promise<Array<[Attributes, number | Histogram]>>;
  /** Every span ended so far. */
  spans(): ReadableSpan[];
  /** Forgets the spans ended so far. */
  resetSpans(): void;
  shutdown(): Promise<void>;
}

export function inMemoryOpenTelemetry(): InMemoryOpenTelemetry {
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // Exports on forceFlush(); the interval is far longer than any test.
  const reader = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 3_600_000,
  });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] });
  const metrics = async () => {
    metricExporter.reset();
    await reader.forceFlush();
    return metricExporter
      .getMetrics()
      .flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
  };
  return {
    meterProvider,
    tracerProvider,
    metrics,
    async points(name) {
      const metric = (await metrics()).find((candidate) => candidate.descriptor.name === name);
      if (metric === undefined) return [];
      return metric.dataPoints.map((point) => [
        point.attributes,
        metric.dataPointType === DataPointType.HISTOGRAM
          ? (point.value as Histogram)
          : (point.value as number),
      ]);
    },
    spans: () => spanExporter.getFinishedSpans(),
    resetSpans: () => spanExporter.reset(),
    async shutdown() {
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    },
  };
}
