import {
  PipelineBuilder,
  type PipelineExecutedEvent,
  ResiliencePipelineBuilder,
  retryStrategy,
  type TelemetryEvent,
  type TelemetryListener,
  timeoutStrategy,
} from 'resil';
import { openTelemetry } from 'resil/opentelemetry';
import { FakeTimeProvider } from 'resil/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type InMemoryOpenTelemetry, inMemoryOpenTelemetry } from './in-memory.ts';

let sdk: InMemoryOpenTelemetry;
beforeEach(() => {
  sdk = inMemoryOpenTelemetry();
});
afterEach(() => sdk.shutdown());

/** Fails `failures` times, then returns 'done'. */
function flaky(failures: number) {
  let calls = 0;
  return async () => {
    if (++calls <= failures) throw new Error(`flaky ${calls}`);
    return 'done';
  };
}

describe('openTelemetry() on a pipeline', () => {
  it('counts strategy events in resil.strategy.events by event, strategy and pipeline', async () => {
    const time = new FakeTimeProvider();
    const telemetry = openTelemetry({ meter: sdk.meterProvider.getMeter('test'), pipeline: 'payments' });
    const pipeline = new PipelineBuilder({ timeProvider: time, telemetry })
      .add(retryStrategy({ maxRetryAttempts: 3, delay: 200 }))
      .build();
    const result = pipeline.execute(flaky(2));
    await time.advance(400);
    expect(await result).toBe('done');

    expect(await sdk.points('resil.strategy.events')).toEqual([
      [{ event: 'OnRetry', strategy: 'retry', pipeline: 'payments' }, 2],
    ]);
    const [metric] = (await sdk.metrics()).filter((m) => m.descriptor.name === 'resil.strategy.events');
    expect(metric!.descriptor).toMatchObject({ unit: '{event}', type: 'COUNTER' });
  });

  it('measures each execution in resil.pipeline.duration (ms, on the pipeline clock), by outcome and error.type', async () => {
    const time = new FakeTimeProvider();
    const telemetry = openTelemetry({ meter: sdk.meterProvider.getMeter('test'), pipeline: 'payments' });
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time, telemetry })
      .addTimeout(1_000)
      .addRetry({ maxRetryAttempts: 1, delay: 200 })
      .build();

    const success = pipeline.execute(flaky(1));
    await time.advance(200);
    await success;
    const timedOut = pipeline.settle(
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
    );
    await time.advance(1_000);
    const outcome = await timedOut;
    expect(outcome.ok).toBe(false);

    const points = await sdk.points('resil.pipeline.duration');
    expect(points).toEqual([
      [{ pipeline: 'payments', outcome: 'success' }, expect.objectContaining({ count: 1, sum: 200 })],
      [
        { pipeline: 'payments', outcome: 'failure', 'error.type': 'TIMEOUT' },
        expect.objectContaining({ count: 1, sum: 1_000 }),
      ],
    ]);
    const { buckets } = points[0]![1] as { buckets: { boundaries: number[]; counts: number[] } };
    expect(buckets.boundaries.length).toBeGreaterThan(0);
    expect(buckets.counts.reduce((sum, count) => sum + count, 0)).toBe(1);
    expect(await sdk.points('resil.strategy.events')).toEqual(
      expect.arrayContaining([
        [{ event: 'OnRetry', strategy: 'retry', pipeline: 'payments' }, 1],
        [{ event: 'OnTimeout', strategy: 'timeout', pipeline: 'payments' }, 1],
      ]),
    );
  });

  it('a callback error counts as a failure with its name or code as error.type', async () => {
    const telemetry = openTelemetry({ meter: sdk.meterProvider.getMeter('test') });
    const pipeline = new PipelineBuilder({ telemetry }).build();
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    await pipeline.settle(() => Promise.reject(refused));
    await pipeline.settle(() => Promise.reject(new TypeError('nope')));
    await pipeline.settle(() => Promise.reject('a string'));
    const failures = (await sdk.points('resil.pipeline.duration')).map(([attributes]) => attributes);
    expect(failures).toEqual([
      { outcome: 'failure', 'error.type': 'ECONNREFUSED' },
      { outcome: 'failure', 'error.type': 'TypeError' },
      { outcome: 'failure', 'error.type': 'string' },
    ]);
  });

  it('without a pipeline name the attribute is left out; pipelineListener(name) shares the instruments', async () => {
    const telemetry = openTelemetry({ meter: sdk.meterProvider.getMeter('test') });
    const search = telemetry.pipelineListener('search');
    const unnamed = new PipelineBuilder({ telemetry }).add(retryStrategy({ delay: 0 })).build();
    const named = new PipelineBuilder({ telemetry: search }).add(retryStrategy({ delay: 0 })).build();
    await unnamed.execute(flaky(1));
    await named.execute(flaky(1));
    await named.execute(flaky(0));
    expect(await sdk.points('resil.strategy.events')).toEqual([
      [{ event: 'OnRetry', strategy: 'retry' }, 1],
      [{ event: 'OnRetry', strategy: 'retry', pipeline: 'search' }, 1],
    ]);
    const counts = (await sdk.points('resil.pipeline.duration')).map(([attributes, value]) => [
      attributes,
      (value as { count: number }).count,
    ]);
    expect(counts).toEqual([
      [{ outcome: 'success' }, 1],
      [{ pipeline: 'search', outcome: 'success' }, 2],
    ]);
  });

  it('works on the API alone (no SDK registered: no-op tracer and meter)', async () => {
    const pipeline = new PipelineBuilder({ telemetry: openTelemetry() })
      .add(timeoutStrategy(1_000))
      .add(retryStrategy({ delay: 0 }))
      .build();
    expect(await pipeline.execute(flaky(1))).toBe('done');
  });

  it('a meter that throws changes no outcome', async () => {
    const broken = {
      createCounter: () => ({
        add() {
          throw new Error('counter bug');
        },
      }),
      createHistogram: () => ({
        record() {
          throw new Error('histogram bug');
        },
      }),
    };
    const pipeline = new PipelineBuilder({ telemetry: openTelemetry({ meter: broken as never }) })
      .add(retryStrategy({ delay: 0 }))
      .build();
    expect(await pipeline.execute(flaky(1))).toBe('done');
    await expect(pipeline.execute(() => Promise.reject(new Error('own error')))).rejects.toThrow('own error');
  });

  it('rejects bad options, naming them', () => {
    expect(() => openTelemetry({ meter: {} as never })).toThrow(
      'Invalid option meter: expected an OpenTelemetry Meter (createCounter, createHistogram), got {}.',
    );
    expect(() => openTelemetry({ tracer: 'jaeger' as never })).toThrow(
      'Invalid option tracer: expected an OpenTelemetry Tracer (startSpan), got "jaeger".',
    );
    expect(() => openTelemetry({ pipeline: '' })).toThrow(
      'Invalid option pipeline: expected a non-empty string, got "".',
    );
    expect(() => openTelemetry().pipelineListener(42 as never)).toThrow(
      'Invalid option pipelineListener(pipeline): expected a non-empty string, got 42.',
    );
    expect(() => openTelemetry(null as never)).toThrow('Invalid option options: expected an options object');
  });
});

describe('PipelineBuilder telemetry.onPipelineExecuted', () => {
  it('is called once per execution with its duration, outcome and context; strategy events still reach the listener', async () => {
    const time = new FakeTimeProvider();
    const executions: Array<{ duration: number; ok: boolean; operationKey: string | undefined }> = [];
    const events: string[] = [];
    const listener: TelemetryListener = Object.assign((event: TelemetryEvent) => events.push(event.event), {
      onPipelineExecuted: ({ duration, outcome, context }: PipelineExecutedEvent) => {
        executions.push({ duration, ok: outcome.ok, operationKey: context.operationKey });
      },
    });
    const pipeline = new PipelineBuilder({ timeProvider: time, telemetry: listener })
      .add(retryStrategy({ maxRetryAttempts: 1, delay: 50 }))
      .build();
    const run = pipeline.execute(flaky(1), { operationKey: 'op-1' });
    await time.advance(50);
    await run;
    expect(executions).toEqual([{ duration: 50, ok: true, operationKey: 'op-1' }]);
    expect(events).toEqual(['OnRetry']);
  });

  it('one that throws changes nothing; one that is not a function fails build()', async () => {
    const throwing = Object.assign(() => {}, {
      onPipelineExecuted() {
        throw new Error('listener bug');
      },
    });
    expect(await new PipelineBuilder({ telemetry: throwing }).build().execute(async () => 7)).toBe(7);
    const bad = Object.assign(() => {}, { onPipelineExecuted: 'yes' });
    expect(() => new PipelineBuilder({ telemetry: bad as never }).build()).toThrow(
      'Invalid option telemetry.onPipelineExecuted: expected a function, got "yes".',
    );
  });
});
