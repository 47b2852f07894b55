import { MemoryLockStore } from 'resil';
import { createScheduler, isConfigError, isUnknownJobError, type SchedulerEvent } from 'resil/scheduler';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

const start = Date.parse('2026-03-01T01:59:58.000Z');

function setup(run: () => unknown = async () => {}) {
  const time = new FakeTimeProvider(start);
  const store = new MemoryLockStore({ timeProvider: time });
  const events: SchedulerEvent[] = [];
  const scheduler = createScheduler({
    store,
    timeProvider: time,
    timezone: 'UTC',
    jobs: [
      { name: 'nightly-report', schedule: '0 2 * * *', run },
      { name: 'tick', schedule: '* * * * * *', run, enabled: false },
    ],
  });
  scheduler.on((event) => events.push(event));
  return { time, store, events, scheduler };
}

describe('createScheduler (resil/scheduler)', () => {
  it('fires on the scheduler clock and streams each fire as events', async () => {
    const { time, events, scheduler } = setup();
    await scheduler.start();
    await time.advance(2_000);
    await scheduler.stop();
    expect(events.map((event) => [event.type, event.job, event.scheduledAt.toISOString()])).toEqual([
      ['started', 'nightly-report', '2026-03-01T02:00:00.000Z'],
      ['succeeded', 'nightly-report', '2026-03-01T02:00:00.000Z'],
    ]);
  });

  it('registers the instance in the store while it runs (resil instances), heartbeat every 5 s, and removes it on stop', async () => {
    const { time, store, scheduler } = setup();
    expect(await store.listInstances()).toEqual([]);
    await scheduler.start();
    await time.advance(0);
    const [registered] = await store.listInstances();
    expect(registered).toMatchObject({
      host: expect.any(String),
      pid: process.pid,
      jobs: 1,
      version: 'unknown',
    });
    // Renewed before its 15 s registration runs out.
    await time.advance(20_000);
    expect(await store.listInstances()).toHaveLength(1);
    await scheduler.stop();
    expect(await store.listInstances()).toEqual([]);
  });

  it('nextRuns: the next instants of a job, after now by the scheduler clock', async () => {
    const { scheduler } = setup();
    expect(scheduler.nextRuns('nightly-report', 3).map((date) => date.toISOString())).toEqual([
      '2026-03-01T02:00:00.000Z',
      '2026-03-02T02:00:00.000Z',
      '2026-03-03T02:00:00.000Z',
    ]);
    expect(scheduler.nextRuns('nightly-report')).toHaveLength(5);
    expect(() => scheduler.nextRuns('nightly-reprot')).toThrow(/did you mean "nightly-report"/);
    expect(() => scheduler.nextRuns('tick', -1)).toThrow(RangeError);
  });

  it('trigger: a manual run through the full pipeline, also of a disabled job; unknown names fail clearly', async () => {
    const ran: string[] = [];
    const { events, scheduler } = setup(async () => {
      ran.push('run');
    });
    await scheduler.start();
    expect(await scheduler.trigger('tick')).toEqual({ outcome: 'success', token: 1, attempts: 1 });
    expect(events.find((event) => event.type === 'succeeded')).toMatchObject({ job: 'tick', kind: 'manual' });
    const error = await scheduler.trigger('tik').catch((caught: unknown) => caught);
    expect(isUnknownJobError(error)).toBe(true);
    expect(String(error)).toContain('did you mean "tick"');
    await scheduler.stop();
  });

  it('start() twice and trigger() after stop() are errors that say so', async () => {
    const { scheduler } = setup();
    await scheduler.start();
    await expect(scheduler.start()).rejects.toThrow(/start\(\) was called twice/);
    await scheduler.stop({ graceMs: 0 });
    await expect(scheduler.trigger('tick')).rejects.toThrow(/after stop\(\)/);
  });

  it('bad options get the config errors, every problem at once', () => {
    let error: unknown;
    try {
      createScheduler({
        jobs: [
          { name: 'a', schedule: 'not cron', run: async () => {} },
          { name: 'a', schedule: '* * * * *', run: async () => {}, timeout: '5 parsecs' as never },
        ],
      });
    } catch (caught) {
      error = caught;
    }
    expect(isConfigError(error)).toBe(true);
    const message = String((error as Error).message);
    expect(message).toContain(
      'createScheduler() options: job "a": option "schedule": invalid cron expression',
    );
    expect(message).toContain('option "timeout"');
    expect(message).toMatch(/duplicate job name|more than once/);
  });
});
