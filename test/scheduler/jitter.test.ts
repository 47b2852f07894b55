/**
 * `jitter`: each occurrence's fires wait a delay in [0, jitter) after the instant, the same on every
 * instance, before they claim; the occurrence and its starting deadline stay those of the instant.
 */
import { describe, expect, it } from 'vitest';
import type { ResolvedJob } from '../../src/scheduler/job.ts';
import { jitterOf } from '../../src/scheduler/occurrence.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';
import { ControlledStore, instanceOf, JobProbe, resolvedJob } from './fixtures.ts';

const start = Date.parse('2026-01-01T02:00:00.000Z');

const instance = (store: ControlledStore, job: ResolvedJob, name = 'a') => instanceOf(store, job, { name });

function setup(overrides: Partial<ResolvedJob> = {}) {
  const time = new FakeTimeProvider(start);
  const store = new ControlledStore(time);
  const probe = new JobProbe(time, store);
  const job = resolvedJob({ run: probe.run, jitterMs: 10_000, ...overrides });
  // An occurrence whose delay is well inside the jitter, so "before" and "after" are both visible.
  let scheduledAt = start;
  while (jitterOf(job, scheduledAt) < 1_000) scheduledAt += 60_000;
  time.setNow(scheduledAt);
  return { time, store, probe, job, scheduledAt, delay: jitterOf(job, scheduledAt) };
}

describe('jitterOf', () => {
  it('is the same for the same occurrence, in [0, jitter), and spreads occurrences and jobs', () => {
    const job = { name: 'report', jitterMs: 30_000 };
    const instants = Array.from({ length: 200 }, (_, index) => start + index * 60_000);
    const delays = instants.map((instant) => jitterOf(job, instant));

    expect(instants.map((instant) => jitterOf({ ...job }, new Date(instant)))).toEqual(delays);
    for (const delay of delays) {
      expect(Number.isInteger(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(30_000);
    }
    expect(new Set(delays).size).toBeGreaterThan(150);
    expect(Math.min(...delays)).toBeLessThan(5_000);
    expect(Math.max(...delays)).toBeGreaterThan(25_000);
    const other = instants.map((instant) => jitterOf({ name: 'other', jitterMs: 30_000 }, instant));
    expect(other).not.toEqual(delays);
  });

  it('is 0 for a job without jitter', () => {
    expect(jitterOf({ name: 'report', jitterMs: undefined }, start)).toBe(0);
    expect(jitterOf({ name: 'report' }, start)).toBe(0);
  });
});

describe('JobFirer with jitter', () => {
  it('waits the occurrence jitter before its first claim; the occurrence stays scheduledAt', async () => {
    const { time, store, probe, job, scheduledAt, delay } = setup();
    const { firer, logger } = await instance(store, job);
    const claimsBefore = store.claimCalls;

    const fired = firer.fire(scheduledAt);
    await time.advance(delay - 1);
    expect(store.claimCalls).toBe(claimsBefore);
    expect(probe.calls).toHaveLength(0);
    await time.advance(1);
    const result = await fired;

    expect(result).toMatchObject({ outcome: 'success' });
    expect(probe.calls).toHaveLength(1);
    expect(probe.calls[0]!.startedAt).toBe(scheduledAt + delay);
    expect(probe.calls[0]!.ctx.scheduledAt).toEqual(new Date(scheduledAt));
    expect(await store.lastCompleted('report')).toBe(scheduledAt);
    const [record] = await store.runHistory('report');
    expect(record).toMatchObject({ scheduledAt, outcome: 'success' });
    expect(logger.fires()).toEqual([
      expect.objectContaining({ scheduledAt: new Date(scheduledAt).toISOString(), lateMs: delay }),
    ]);
  });

  it('never starts early by the store clock, which runs behind this instance', async () => {
    const { time, store, probe, job, scheduledAt, delay } = setup();
    store.skewMs = -400;
    const { firer } = await instance(store, job);

    const fired = firer.fire(scheduledAt);
    await time.advance(delay + 1_000);
    await fired;

    expect(probe.calls).toHaveLength(1);
    expect(probe.calls[0]!.storeNow).toBeGreaterThanOrEqual(scheduledAt + delay);
  });

  it('the fleet waits the same delay, so its instances compete at one moment and the occurrence runs once', async () => {
    const { time, store, probe, job, scheduledAt, delay } = setup();
    const a = await instance(store, job, 'a');
    const b = await instance(store, job, 'b');
    const claimsBefore = store.claimCalls;

    const fires = [a.firer.fire(scheduledAt), b.firer.fire(scheduledAt)];
    await time.advance(delay - 1);
    expect(store.claimCalls).toBe(claimsBefore);
    await time.advance(1);
    expect(store.claimCalls).toBe(claimsBefore + 2);
    const results = await Promise.all(fires);

    expect(probe.calls).toHaveLength(1);
    expect(results.map((result) => result.outcome).sort()).toEqual(['skipped', 'success']);
  });

  it('counts the starting deadline from scheduledAt, not from scheduledAt + jitter', async () => {
    const { time, store, probe, job, scheduledAt } = setup({ startingDeadlineMs: 12_000 });
    const { firer, logger } = await instance(store, job);
    time.setNow(scheduledAt + 12_001);

    const result = await firer.fire(scheduledAt);

    expect(result).toEqual({ outcome: 'skipped', reason: 'missed' });
    expect(probe.calls).toHaveLength(0);
    expect(logger.fires()).toEqual([expect.objectContaining({ reason: 'missed', lateMs: 12_001 })]);
  });

  it('a late fire past its jitter claims at once', async () => {
    const { time, store, probe, job, scheduledAt, delay } = setup();
    const { firer } = await instance(store, job);
    time.setNow(scheduledAt + delay + 500);

    await firer.fire(scheduledAt);

    expect(probe.calls.map((call) => call.startedAt)).toEqual([scheduledAt + delay + 500]);
  });

  it('a lock: false job waits its jitter too', async () => {
    const { time, store, probe, job, scheduledAt, delay } = setup({ lock: false });
    const { firer } = await instance(store, job);

    const fired = firer.fire(scheduledAt);
    await time.advance(delay - 1);
    expect(probe.calls).toHaveLength(0);
    await time.advance(1_000);
    await fired;

    expect(probe.calls).toHaveLength(1);
    expect(probe.calls[0]!.startedAt).toBeGreaterThanOrEqual(scheduledAt + delay);
    expect(probe.calls[0]!.ctx.scheduledAt).toEqual(new Date(scheduledAt));
  });

  it('a manual run does not wait for jitter', async () => {
    const { store, probe, job, scheduledAt } = setup();
    const { firer } = await instance(store, job);

    await firer.fire(scheduledAt, { kind: 'manual' });

    expect(probe.calls.map((call) => call.startedAt)).toEqual([scheduledAt]);
  });
});
