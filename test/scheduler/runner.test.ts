/**
 * JobRunner with croner, on vitest's fake timers: croner reads the global Date and setTimeout,
 * so the runner's clock here is the (faked) globals, and no test sleeps.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TimeProvider } from '../../src/pipeline/time.ts';
import { isShutdownError, isUnknownJobError } from '../../src/scheduler/errors.ts';
import type { ResolvedJob } from '../../src/scheduler/job.ts';
import { JobRunner, runJobNow } from '../../src/scheduler/runner.ts';
import {
  ControlledStore,
  completeOccurrence,
  JobProbe,
  RecordingLogger,
  resolvedConfig,
  resolvedJob,
} from './fixtures.ts';

const start = Date.parse('2026-01-01T02:00:00.000Z');

/** The faked globals as a TimeProvider (vitest replaces `performance` too, so read it lazily). */
const globalsTime: TimeProvider = {
  now: () => Date.now(),
  monotonic: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

function setup(
  jobs: (probe: JobProbe, store: ControlledStore) => ResolvedJob[],
  behaviour: 'immediate' | 'hold' = 'immediate',
  shutdownGraceMs = 30_000,
) {
  const store = new ControlledStore(globalsTime);
  const probe = new JobProbe(globalsTime, store, behaviour);
  const logger = new RecordingLogger();
  const config = resolvedConfig(store, jobs(probe, store), { shutdownGraceMs });
  const runner = new JobRunner({ config, logger, timeProvider: globalsTime, abortSettleMs: 1_000 });
  return { store, probe, logger, config, runner };
}

const scheduledTimes = (probe: JobProbe) => probe.calls.map((call) => call.ctx.scheduledAt.toISOString());

describe('JobRunner', () => {
  beforeEach(() => {
    vi.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
      now: start + 300,
    });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('fires every occurrence on its instant with scheduledAt, and logs one line per fire', async () => {
    const { probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })]);
    await runner.start();
    await vi.advanceTimersByTimeAsync(3_000);
    await runner.stop();

    expect(scheduledTimes(probe)).toEqual([
      '2026-01-01T02:00:01.000Z',
      '2026-01-01T02:00:02.000Z',
      '2026-01-01T02:00:03.000Z',
    ]);
    // The fire landed exactly on the instant: it belongs to that instant, not the previous one.
    expect(probe.calls.map((call) => call.startedAt - call.ctx.scheduledAt.getTime())).toEqual([0, 0, 0]);
    expect(
      logger.fires().map((line) => [line.job, line.scheduledAt, line.outcome, line.token, line.lateMs]),
    ).toEqual([
      ['report', '2026-01-01T02:00:01.000Z', 'success', 1, 0],
      ['report', '2026-01-01T02:00:02.000Z', 'success', 2, 0],
      ['report', '2026-01-01T02:00:03.000Z', 'success', 3, 0],
    ]);
    expect(logger.lines.find((line) => line.msg?.startsWith('runner started'))).toMatchObject({
      instance: 'test-instance',
      jobs: [
        { name: 'report', schedule: '* * * * * *', nextRun: '2026-01-01T02:00:01.000Z', lock: 'report' },
      ],
    });
  });

  it('a fire that comes late runs the latest passed occurrence and reports those that passed unfired', async () => {
    const { probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })]);
    await runner.start();
    await vi.advanceTimersByTimeAsync(700); // fires 02:00:01
    // The process freezes for 5 s (its timers fire late, its clock moved on).
    vi.setSystemTime(Date.now() + 5_000);
    await vi.advanceTimersByTimeAsync(1_000);
    await runner.stop();

    expect(scheduledTimes(probe)).toEqual(['2026-01-01T02:00:01.000Z', '2026-01-01T02:00:07.000Z']);
    expect(logger.lines.find((line) => line.reason === 'missed')).toMatchObject({
      level: 'warn',
      job: 'report',
      count: 5,
      first: '2026-01-01T02:00:02.000Z',
      last: '2026-01-01T02:00:06.000Z',
    });
  });

  it('skips a fire while the previous run of the job still runs (overlap)', async () => {
    const { probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })], 'hold');
    await runner.start();
    await vi.advanceTimersByTimeAsync(2_000);
    probe.finishAll();
    await vi.advanceTimersByTimeAsync(1_000);
    probe.finishAll();
    await runner.stop();
    expect(logger.fires().map((line) => [line.scheduledAt, line.outcome, line.reason])).toEqual([
      ['2026-01-01T02:00:02.000Z', 'skipped', 'overlap'],
      ['2026-01-01T02:00:01.000Z', 'success', undefined],
      ['2026-01-01T02:00:03.000Z', 'success', undefined],
    ]);
  });

  describe('catch-up', () => {
    const hourly = (probe: JobProbe) => [
      resolvedJob({ run: probe.run, schedule: '0 * * * *', catchUpMs: 90 * 60_000 }),
    ];

    it('runs the latest occurrence inside the window once when the ledger has seen the job but not it', async () => {
      vi.setSystemTime(start + 10 * 60_000);
      const { store, probe, logger, runner } = setup(hourly);
      await completeOccurrence(store.inner, 'report', start - 2 * 3_600_000);
      await runner.start();
      await runner.idle();
      await runner.stop();
      expect(scheduledTimes(probe)).toEqual(['2026-01-01T02:00:00.000Z']);
      expect(logger.fires()).toEqual([
        expect.objectContaining({ outcome: 'success', kind: 'catch-up', lateMs: 600_000 }),
      ]);
      expect(await store.lastCompleted('report')).toBe(start);
    });

    it('does not backfill a job the ledger has never seen', async () => {
      vi.setSystemTime(start + 10 * 60_000);
      const { probe, logger, runner } = setup(hourly);
      await runner.start();
      await runner.idle();
      await runner.stop();
      expect(probe.calls).toHaveLength(0);
      expect(logger.lines.some((line) => line.msg?.includes('never seen'))).toBe(true);
    });

    it('does nothing when the latest occurrence completed, or lies outside the window', async () => {
      vi.setSystemTime(start + 10 * 60_000);
      const done = setup(hourly);
      await completeOccurrence(done.store.inner, 'report', start);
      await done.runner.start();
      await done.runner.idle();
      await done.runner.stop();
      expect(done.probe.calls).toHaveLength(0);

      vi.setSystemTime(start + 100 * 60_000 - 300);
      const outside = setup((probe) => [
        resolvedJob({ run: probe.run, schedule: '0 2 * * *', catchUpMs: 90 * 60_000 }),
      ]);
      await completeOccurrence(outside.store.inner, 'report', start - 86_400_000);
      await outside.runner.start();
      await outside.runner.idle();
      await outside.runner.stop();
      expect(outside.probe.calls).toHaveLength(0);
    });
  });

  describe('stop()', () => {
    it('lets a running job finish within the grace period, and fires nothing after', async () => {
      const { store, probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })], 'hold');
      await runner.start();
      await vi.advanceTimersByTimeAsync(1_000);
      const stopped = runner.stop();
      await vi.advanceTimersByTimeAsync(500);
      probe.finishAll();
      await stopped;
      await vi.advanceTimersByTimeAsync(5_000);
      expect(scheduledTimes(probe)).toEqual(['2026-01-01T02:00:01.000Z']);
      expect(logger.fires().map((line) => line.outcome)).toEqual(['success']);
      expect(probe.calls[0]!.ctx.signal.aborted).toBe(false);
      expect(await store.inspect('report')).toBeUndefined();
    });

    it('aborts the job signal with ShutdownError after the grace period and releases the lease', async () => {
      const { store, probe, logger, runner } = setup(
        (probe) => [resolvedJob({ run: probe.run })],
        'hold',
        2_000,
      );
      await runner.start();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(await store.inspect('report')).toBeDefined();
      const stopped = runner.stop();
      await vi.advanceTimersByTimeAsync(1_999);
      expect(probe.calls[0]!.ctx.signal.aborted).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await stopped;
      expect(isShutdownError(probe.calls[0]!.ctx.signal.reason)).toBe(true);
      expect(logger.fires()).toEqual([expect.objectContaining({ outcome: 'failure' })]);
      expect(await store.inspect('report')).toBeUndefined();
    });

    it('stops even when a job ignores its aborted signal', async () => {
      const { logger, runner } = setup(
        () => [resolvedJob({ run: () => new Promise(() => {}) })],
        'immediate',
        1_000,
      );
      await runner.start();
      await vi.advanceTimersByTimeAsync(1_000);
      const stopped = runner.stop();
      await vi.advanceTimersByTimeAsync(2_000);
      await stopped;
      const stuck = logger.lines.find(
        (line) => line.level === 'error' && line.msg?.includes('ignored their aborted signal'),
      );
      // Names the job and the occurrence it was running.
      expect(stuck?.msg).toMatch(/stopping without report \(\d{4}-\d\d-\d\dT[\d:.]+Z\)/);
      expect(stuck).toMatchObject({
        jobs: [{ job: 'report', scheduledAt: expect.stringMatching(/Z$/) }],
      });
    });

    it('drops a fire still waiting for the store clock (never early) at once', async () => {
      const { store, probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })]);
      store.skewMs = -5_000;
      await runner.start();
      await vi.advanceTimersByTimeAsync(1_000); // fires 02:00:01, which the store reaches only in 5 s
      await runner.stop();
      expect(probe.calls).toHaveLength(0);
      expect(logger.fires()).toEqual([expect.objectContaining({ outcome: 'skipped', reason: 'shutdown' })]);
    });
  });

  it('stays up through a store outage: fires skip as store-unavailable, then resume', async () => {
    const { store, probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })]);
    await runner.start();
    store.down = true;
    await vi.advanceTimersByTimeAsync(2_000);
    store.down = false;
    await vi.advanceTimersByTimeAsync(1_000);
    await runner.stop();
    expect(logger.fires().map((line) => [line.scheduledAt, line.outcome, line.reason])).toEqual([
      ['2026-01-01T02:00:01.000Z', 'skipped', 'store-unavailable'],
      ['2026-01-01T02:00:02.000Z', 'skipped', 'store-unavailable'],
      ['2026-01-01T02:00:03.000Z', 'success', undefined],
    ]);
    expect(probe.calls).toHaveLength(1);
  });

  it('schedules only the named jobs (a disabled one too) and rejects an unknown name', async () => {
    const store = new ControlledStore(globalsTime);
    const jobs = [
      resolvedJob({ name: 'a', run: () => {} }),
      resolvedJob({ name: 'b', run: () => {}, enabled: false }),
      resolvedJob({ name: 'c', run: () => {}, enabled: false }),
    ];
    const config = resolvedConfig(store, jobs);
    const logger = new RecordingLogger();
    expect(new JobRunner({ config, logger }).jobs.map((job) => job.name)).toEqual(['a']);
    expect(new JobRunner({ config, logger, jobs: ['b'] }).jobs.map((job) => job.name)).toEqual(['b']);
    let error: unknown;
    try {
      new JobRunner({ config, logger, jobs: ['a', 'nope'] });
    } catch (caught) {
      error = caught;
    }
    expect(isUnknownJobError(error)).toBe(true);
    expect((error as Error).message).toBe('unknown job "nope"; jobs in this config: a, b, c');
    try {
      new JobRunner({ config, logger, jobs: ['bb'] });
    } catch (caught) {
      error = caught;
    }
    expect((error as Error).message).toBe(
      'unknown job "bb"; jobs in this config: a, b, c (did you mean "b"?)',
    );
  });
});

describe('runJobNow', () => {
  it('runs the job now through its pipeline and reports a held lock as skipped', async () => {
    const store = new ControlledStore(globalsTime);
    const probe = new JobProbe(globalsTime, store);
    const config = resolvedConfig(store, [resolvedJob({ run: probe.run })]);
    const logger = new RecordingLogger();
    expect(await runJobNow(config, 'report', logger)).toEqual({ outcome: 'success', token: 1, attempts: 1 });
    expect(probe.calls).toHaveLength(1);
    await store.acquire('report', 'elsewhere', 60_000);
    expect(await runJobNow(config, 'report', logger)).toEqual({ outcome: 'skipped', reason: 'overlap' });
    await expect(runJobNow(config, 'nope', logger)).rejects.toMatchObject({ code: 'UNKNOWN_JOB' });
  });
});
