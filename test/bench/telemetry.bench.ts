/**
 * What `openTelemetry()` costs, measured in one process, interleaved, as ratios:
 * - per `pipeline.execute()` (PipelineBuilder + retry, success path): no telemetry, a plain
 *   telemetry listener (strategy events only), `openTelemetry()` on the API alone (no SDK: no-op
 *   meter), and `openTelemetry()` on the SDK's MeterProvider (counter + histogram, in-memory reader);
 * - per job run through the scheduler's full fire path (`trigger()`: run ledger claim, lease,
 *   pipeline, finish, events) on a MemoryLockStore: no config telemetry, and `openTelemetry()` on
 *   the SDK (metrics plus one span per run, SimpleSpanProcessor into an InMemorySpanExporter),
 *   with a second scheduler without telemetry as the control for the noise between two cases.
 *
 * `npm run bench -- telemetry`. Run it alone for absolute figures: a bench before it in the same
 * process (a lock) may have turned on AsyncLocalStorage's promise hooks, which slows every case.
 */
import { MemoryLockStore, PipelineBuilder, retryStrategy } from '../../src/index.ts';
import { openTelemetry } from '../../src/opentelemetry/index.ts';
import { createScheduler } from '../../src/scheduler/index.ts';
import { inMemoryOpenTelemetry } from '../opentelemetry/in-memory.ts';
import { type BenchOptions, compare, printTable } from './harness.ts';

export default async function telemetryBench(options: BenchOptions): Promise<void> {
  const work = async () => 42;
  const sdk = inMemoryOpenTelemetry();
  const meter = sdk.meterProvider.getMeter('bench');
  const tracer = sdk.tracerProvider.getTracer('bench');

  const pipelineWith = (telemetry?: Parameters<typeof openTelemetry>[0] | 'listener') =>
    new PipelineBuilder({
      telemetry:
        telemetry === undefined ? undefined : telemetry === 'listener' ? () => {} : openTelemetry(telemetry),
    })
      .add(retryStrategy({ maxRetryAttempts: 3 }))
      .build();
  const none = pipelineWith();
  const listener = pipelineWith('listener');
  const noop = pipelineWith({ pipeline: 'bench' });
  const withSdk = pipelineWith({ meter, pipeline: 'bench' });

  const pipelineRows = await compare(
    'PipelineBuilder + retry: execute() per call, success path',
    [
      { name: 'no telemetry', run: () => none.execute(work) },
      { name: 'plain telemetry listener', run: () => listener.execute(work) },
      { name: 'openTelemetry(), API only (no-op)', run: () => noop.execute(work) },
      { name: 'openTelemetry({ meter }), SDK', run: () => withSdk.execute(work) },
    ],
    { ...options, baseline: 'no telemetry' },
  );

  const schedulerWith = (telemetry: boolean) =>
    createScheduler({
      store: new MemoryLockStore(),
      instance: 'bench',
      // Each trigger is a new occurrence in the run ledger; keep it from growing through the run.
      ledgerRetention: '1s',
      ...(telemetry ? { telemetry: openTelemetry({ meter, tracer }) } : {}),
      jobs: [{ name: 'report', schedule: '0 2 * * *', enabled: false, run: work }],
    });
  const plain = schedulerWith(false);
  const control = schedulerWith(false);
  const traced = schedulerWith(true);
  let runs = 0;
  const fireRows = await compare(
    'a job run through the fire path (trigger(), MemoryLockStore)',
    [
      { name: 'no config telemetry', run: () => plain.trigger('report') },
      // The same again: how far two identical cases differ on this machine in this run.
      { name: 'no config telemetry (control)', run: () => control.trigger('report') },
      {
        name: 'openTelemetry({ meter, tracer }), SDK',
        run: () => {
          // Finished spans pile up in the in-memory exporter; keep the heap flat.
          if (++runs % 1_000 === 0) sdk.resetSpans();
          return traced.trigger('report');
        },
      },
    ],
    { ...options, baseline: 'no config telemetry' },
  );
  await Promise.all([plain.stop(), control.stop(), traced.stop()]);
  await sdk.shutdown();

  const added = (rows: typeof pipelineRows, name: string, baseline: string) =>
    rows.find((row) => row.name === name)!.nsPerOp - rows.find((row) => row.name === baseline)!.nsPerOp;
  printTable(
    'what telemetry adds, ns per call',
    ['case', 'added ns'],
    [
      ['execute(): plain listener', added(pipelineRows, 'plain telemetry listener', 'no telemetry')],
      [
        'execute(): openTelemetry(), API only',
        added(pipelineRows, 'openTelemetry(), API only (no-op)', 'no telemetry'),
      ],
      [
        'execute(): openTelemetry(), SDK',
        added(pipelineRows, 'openTelemetry({ meter }), SDK', 'no telemetry'),
      ],
      [
        'job run: openTelemetry(), SDK',
        added(fireRows, 'openTelemetry({ meter, tracer }), SDK', 'no config telemetry'),
      ],
    ],
  );
}
