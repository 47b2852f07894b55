import { describe, expect, it } from 'vitest';
import { type SchedulerEvent, SchedulerEvents } from '../../src/scheduler/events.ts';
import { type FireEnvironment, JobFirer } from '../../src/scheduler/fire.ts';
import { StoreClock } from '../../src/scheduler/store-clock.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';
import { ControlledStore, JobProbe, RecordingLogger, resolvedJob } from './fixtures.ts';

const start = Date.parse('2026-01-01T02:00:00.000Z');

async function setup(job: Parameters<typeof resolvedJob>[0]) {
  const time = new FakeTimeProvider(start);
  const store = new ControlledStore(time);
  const clock = new StoreClock(store, time);
  await clock.sync();
  const events = new SchedulerEvents();
  const seen: SchedulerEvent[] = [];
  events.on((event) => seen.push(event));
  const environment: FireEnvironment = {
    store,
    ledger: store,
    clock,
    time,
    instance: 'a',
    ledgerRetentionMs: 86_400_000,
    ledgerRecordLimit: 100,
    logger: new RecordingLogger(),
    emit: (event) => events.emit(event),
  };
  return { time, store, events, seen, firer: new JobFirer(resolvedJob(job), environment) };
}

describe('scheduler events', () => {
  it('a run emits started then succeeded, with the occurrence, the token and the lateness', async () => {
    const probe = new JobProbe(new FakeTimeProvider(start));
    const { time, seen, firer } = await setup({ run: probe.run });
    await time.advance(250);
    await firer.fire(start);
    expect(seen.map((event) => event.type)).toEqual(['started', 'succeeded']);
    expect(seen[0]).toEqual({
      type: 'started',
      job: 'report',
      scheduledAt: new Date(start),
      instance: 'a',
      kind: 'scheduled',
      token: 1,
      takeover: false,
      lateMs: 250,
    });
    expect(seen[1]).toMatchObject({ type: 'succeeded', token: 1, attempts: 1, lateMs: 250, takeover: false });
  });

  it('retries, failures and skips are events too, a skip with its reason', async () => {
    const { time, seen, firer } = await setup({
      run: async () => {
        throw new Error('boom');
      },
      retry: { maxRetryAttempts: 1, delay: 10 },
    });
    const fired = firer.fire(start);
    await time.advance(10);
    await fired;
    await firer.fire(start);
    expect(seen.map((event) => event.type)).toEqual(['started', 'retrying', 'failed', 'skipped']);
    expect(seen[1]).toMatchObject({ attempt: 1, delayMs: 10 });
    expect((seen[2] as { error: Error }).error.message).toBe('boom');
    expect(seen[3]).toMatchObject({ type: 'skipped', reason: 'already-done' });
  });

  it('a listener that throws breaks neither the fire nor the other listeners; unsubscribe stops delivery', async () => {
    const probe = new JobProbe(new FakeTimeProvider(start));
    const { time, events, seen, firer } = await setup({ run: probe.run });
    const second: string[] = [];
    events.on(() => {
      throw new Error('listener bug');
    });
    const unsubscribe = events.on((event) => second.push(event.type));
    expect((await firer.fire(start)).outcome).toBe('success');
    expect(second).toEqual(['started', 'succeeded']);
    unsubscribe();
    await time.advance(1_000);
    await firer.fire(start + 1_000);
    expect(second).toHaveLength(2);
    expect(seen).toHaveLength(4);
    expect(() => events.on(undefined as never)).toThrow(TypeError);
  });
});
