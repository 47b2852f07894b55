import { SpanStatusCode } from '@opentelemetry/api';
import { delay, MemoryLockStore } from 'resil';
import { openTelemetry } from 'resil/opentelemetry';
import { createScheduler, type JobDefinition, type SchedulerEvent } from 'resil/scheduler';
import { FakeTimeProvider } from 'resil/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type InMemoryOpenTelemetry, inMemoryOpenTelemetry } from './in-memory.ts';

const start = Date.parse('2026-03-01T01:59:58.000Z');

let sdk: InMemoryOpenTelemetry;
beforeEach(() => {
  sdk = inMemoryOpenTelemetry();
});
afterEach(() => sdk.shutdown());

function setup(jobs: (time: FakeTimeProvider) => JobDefinition[]) {
  const time = new FakeTimeProvider(start);
  const events: SchedulerEvent[] = [];
  const scheduler = createScheduler({
    store: new MemoryLockStore({ timeProvider: time }),
    timeProvider: time,
    timezone: 'UTC',
    instance: 'worker-1',
    telemetry: openTelemetry({
      tracer: sdk.tracerProvider.getTracer('test'),
      meter: sdk.meterProvider.getMeter('test'),
    }),
    jobs: jobs(time),
  });
  scheduler.on((event) => events.push(event));
  return { time, events, scheduler };
}

describe('openTelemetry() as the config telemetry', () => {
  it('makes one span per job run, from its start to its end on the scheduler clock, with its attributes', async () => {
    const { time, scheduler } = setup((clock) => [
      { name: 'nightly-report', schedule: '0 2 * * *', run: () => delay(clock, 1_500) },
    ]);
    await scheduler.start();
    await time.advance(2_000 + 1_500);
    await scheduler.stop();

    const spans = sdk.spans();
    expect(spans.map((span) => span.name)).toEqual(['resil.job nightly-report']);
    const [span] = spans;
    expect(span!.attributes).toEqual({
      'resil.job': 'nightly-report',
      'resil.scheduled_at': '2026-03-01T02:00:00.000Z',
      'resil.token': 1,
      'resil.outcome': 'success',
      'resil.instance': 'worker-1',
      'resil.kind': 'scheduled',
      'resil.attempts': 1,
    });
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
    const ms = ([seconds, nanos]: readonly [number, number]) => seconds * 1_000 + nanos / 1e6;
    expect(ms(span!.startTime)).toBe(Date.parse('2026-03-01T02:00:00.000Z'));
    expect(ms(span!.duration)).toBe(1_500);
  });

  it('a failed run: outcome failure, error status, the exception, and no URL password in either', async () => {
    const { time, scheduler } = setup(() => [
      {
        name: 'sync',
        schedule: '0 2 * * *',
        retry: { maxRetryAttempts: 1, delay: 100 },
        run: () => {
          throw new Error('cannot reach redis://admin:s3cret@cache:6379');
        },
      },
    ]);
    await scheduler.start();
    await time.advance(2_000 + 100);
    await scheduler.stop();

    const [span] = sdk.spans();
    expect(span!.name).toBe('resil.job sync');
    expect(span!.attributes).toMatchObject({
      'resil.job': 'sync',
      'resil.outcome': 'failure',
      'resil.attempts': 2,
      'error.type': 'Error',
    });
    expect(span!.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: 'Error: cannot reach redis://admin:[redacted]@cache:6379',
    });
    expect(span!.events.map((event) => [event.name, event.attributes?.['exception.message']])).toEqual([
      ['exception', 'cannot reach redis://admin:[redacted]@cache:6379'],
    ]);
    expect(JSON.stringify(span!.events)).not.toContain('s3cret');
  });

  it("meters each job's pipeline under the job's name", async () => {
    const { time, scheduler } = setup((clock) => {
      let calls = 0;
      return [
        {
          name: 'import',
          schedule: '0 2 * * *',
          retry: { maxRetryAttempts: 2, delay: 100 },
          run: async () => {
            await delay(clock, 50);
            if (++calls < 3) throw new Error('flaky');
          },
        },
      ];
    });
    await scheduler.start();
    await time.advance(2_000 + 50 + 100 + 50 + 100 + 50);
    await scheduler.stop();

    expect(await sdk.points('resil.strategy.events')).toEqual([
      [{ event: 'OnRetry', strategy: 'retry', pipeline: 'import' }, 2],
    ]);
    expect(await sdk.points('resil.pipeline.duration')).toEqual([
      [{ pipeline: 'import', outcome: 'success' }, expect.objectContaining({ count: 1, sum: 350 })],
    ]);
    expect(sdk.spans()[0]!.attributes).toMatchObject({ 'resil.outcome': 'success', 'resil.attempts': 3 });
  });

  it('skipped fires get no span: only runs do', async () => {
    const { time, events, scheduler } = setup((clock) => [
      { name: 'tick', schedule: '* * * * * *', run: () => delay(clock, 1_500) },
    ]);
    await scheduler.start();
    for (let second = 0; second < 6; second++) await time.advance(1_000);
    // The run in progress finishes within the grace period.
    const stopped = scheduler.stop({ graceMs: 5_000 });
    await time.advance(2_000);
    await stopped;

    const runs = events.filter((event) => event.type === 'succeeded');
    const skips = events.filter((event) => event.type === 'skipped');
    expect(runs.length).toBeGreaterThan(1);
    expect(skips.length).toBeGreaterThan(0);
    expect(skips.every((event) => event.type === 'skipped' && event.reason === 'overlap')).toBe(true);
    expect(sdk.spans().map((span) => span.attributes['resil.scheduled_at'])).toEqual(
      runs.map((event) => event.scheduledAt.toISOString()),
    );
  });

  it('a manual run (trigger) is a span of kind manual', async () => {
    const { scheduler } = setup(() => [
      { name: 'report', schedule: '0 2 * * *', lock: false, enabled: false, run: async () => {} },
    ]);
    await scheduler.start();
    expect(await scheduler.trigger('report')).toMatchObject({ outcome: 'success' });
    await scheduler.stop();
    const [span] = sdk.spans();
    expect(span!.attributes).toMatchObject({ 'resil.job': 'report', 'resil.kind': 'manual' });
    expect(span!.attributes).not.toHaveProperty('resil.token');
  });
});
