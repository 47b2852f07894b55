/**
 * JobRunner on a FakeTimeProvider: its one timer, the store's clock and every lease run on it,
 * so no test sleeps and a test can step the wall clock alone (`setNow`).
 */
import { describe, expect, it, vi } from 'vitest';
import { MemoryLockStore } from '../../src/ledger/memory-store.ts';
import { isShutdownError, isUnknownJobError } from '../../src/scheduler/errors.ts';
import { firstClaimer } from '../../src/scheduler/first-claims.ts';
import type { ResolvedJob } from '../../src/scheduler/job.ts';
import { JobSchedule } from '../../src/scheduler/occurrence.ts';
import { JobRunner, runJobNow } from '../../src/scheduler/runner.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';
import {
  ControlledStore,
  completeOccurrence,
  JobProbe,
  RecordingLogger,
  RecordingTimeProvider,
  resolvedConfig,
  resolvedJob,
} from './fixtures.ts';

const start = Date.parse('2026-01-01T02:00:00.000Z');

function setup(
  jobs: (probe: JobProbe, store: ControlledStore) => ResolvedJob[],
  {
    behaviour = 'immediate',
    shutdownGraceMs = 30_000,
    time = new FakeTimeProvider(start + 300),
  }: { behaviour?: 'immediate' | 'hold'; shutdownGraceMs?: number; time?: FakeTimeProvider } = {},
) {
  const store = new ControlledStore(time);
  const probe = new JobProbe(time, store, behaviour);
  const logger = new RecordingLogger();
  const config = resolvedConfig(store, jobs(probe, store), { shutdownGraceMs });
  const runner = new JobRunner({ config, logger, timeProvider: time, abortSettleMs: 1_000 });
  return { time, store, probe, logger, config, runner };
}

/** How long before an instant the fire queue wakes first (`FireQueue`'s `prepareLeadMs`). */
const prepareLeadMs = 5;

/**
 * An every-second job whose wake after its 02:00:01 fire comes `lateMs` late: the wall clock moved
 * on while no timer ran (a frozen process, a VM paused). Runs `thenMs` more, and stops. From a
 * `lateMs` of 995 the wall clock moves a second or more past the monotonic one: the queue also
 * reports a clock step, which changes no fire.
 */
async function lateWake(lateMs: number, thenMs = 0) {
  const context = setup((probe) => [resolvedJob({ run: probe.run })]);
  const { time, runner } = context;
  await runner.start();
  await time.advance(700); // fires 02:00:01
  // The queue's first timer for 02:00:02 runs `prepareLeadMs` before it, and the wake follows at once.
  time.setNow(time.now() + lateMs + prepareLeadMs);
  await time.advance(1_000 + thenMs);
  await runner.stop();
  return context;
}

const scheduledTimes = (probe: JobProbe) => probe.calls.map((call) => call.ctx.scheduledAt.toISOString());
/** The instants of an every-second job in the first three seconds after `start`. */
const firstThreeSeconds = [
  '2026-01-01T02:00:01.000Z',
  '2026-01-01T02:00:02.000Z',
  '2026-01-01T02:00:03.000Z',
];

describe('JobRunner', () => {
  it('warns at start about a schedule that never fires, and about a config with no enabled job', async () => {
    const never = setup((probe) => [resolvedJob({ name: 'leap', schedule: '0 0 30 2 *', run: probe.run })]);
    await never.runner.start();
    await never.runner.stop();
    expect(never.logger.lines.find((line) => line.msg?.includes('never fires'))).toMatchObject({
      level: 'warn',
      job: 'leap',
      schedule: '0 0 30 2 *',
    });
    const none = setup((probe) => [resolvedJob({ run: probe.run, enabled: false })]);
    await none.runner.start();
    await none.runner.stop();
    expect(
      none.logger.lines.some((line) => line.level === 'warn' && line.msg?.includes('no enabled job')),
    ).toBe(true);
  });

  it('fires every occurrence on its instant with scheduledAt, and logs one line per fire', async () => {
    const { time, probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })]);
    await runner.start();
    await time.advance(3_000);
    await runner.stop();

    expect(scheduledTimes(probe)).toEqual(firstThreeSeconds);
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
      jobCount: 1,
      jobs: [
        { name: 'report', schedule: '* * * * * *', nextRun: '2026-01-01T02:00:01.000Z', lock: 'report' },
      ],
    });
  });

  it('a fire that comes late runs the latest passed occurrence and reports those that passed unfired', async () => {
    // The wall clock moves on 5 s while no timer runs (a frozen process, a VM paused).
    const { probe, logger } = await lateWake(5_000);
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
    const { time, probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })], {
      behaviour: 'hold',
    });
    await runner.start();
    await time.advance(2_000);
    probe.finishAll();
    await time.advance(1_000);
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
      const { store, probe, logger, runner } = setup(hourly, {
        time: new FakeTimeProvider(start + 10 * 60_000),
      });
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
      const { probe, logger, runner } = setup(hourly, { time: new FakeTimeProvider(start + 10 * 60_000) });
      await runner.start();
      await runner.idle();
      await runner.stop();
      expect(probe.calls).toHaveLength(0);
      expect(logger.lines.some((line) => line.msg?.includes('never seen'))).toBe(true);
    });

    it('does nothing when the latest occurrence completed, or lies outside the window', async () => {
      const done = setup(hourly, { time: new FakeTimeProvider(start + 10 * 60_000) });
      await completeOccurrence(done.store.inner, 'report', start);
      await done.runner.start();
      await done.runner.idle();
      await done.runner.stop();
      expect(done.probe.calls).toHaveLength(0);

      const outside = setup(
        (probe) => [resolvedJob({ run: probe.run, schedule: '0 2 * * *', catchUpMs: 90 * 60_000 })],
        { time: new FakeTimeProvider(start + 100 * 60_000 - 300) },
      );
      await completeOccurrence(outside.store.inner, 'report', start - 86_400_000);
      await outside.runner.start();
      await outside.runner.idle();
      await outside.runner.stop();
      expect(outside.probe.calls).toHaveLength(0);
    });
  });

  describe('stop()', () => {
    it('lets a running job finish within the grace period, and fires nothing after', async () => {
      const { time, store, probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })], {
        behaviour: 'hold',
      });
      await runner.start();
      await time.advance(1_000);
      const stopped = runner.stop();
      await time.advance(500);
      probe.finishAll();
      await stopped;
      await time.advance(5_000);
      expect(scheduledTimes(probe)).toEqual(['2026-01-01T02:00:01.000Z']);
      expect(logger.fires().map((line) => line.outcome)).toEqual(['success']);
      expect(probe.calls[0]!.ctx.signal.aborted).toBe(false);
      expect(await store.inspect('report')).toBeUndefined();
    });

    it('aborts the job signal with ShutdownError after the grace period and releases the lease', async () => {
      const { time, store, probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })], {
        behaviour: 'hold',
        shutdownGraceMs: 2_000,
      });
      await runner.start();
      await time.advance(1_000);
      expect(await store.inspect('report')).toBeDefined();
      const stopped = runner.stop();
      await time.advance(1_999);
      expect(probe.calls[0]!.ctx.signal.aborted).toBe(false);
      await time.advance(1);
      await stopped;
      expect(isShutdownError(probe.calls[0]!.ctx.signal.reason)).toBe(true);
      expect(logger.fires()).toEqual([expect.objectContaining({ outcome: 'failure' })]);
      expect(await store.inspect('report')).toBeUndefined();
    });

    it('stops even when a job ignores its aborted signal', async () => {
      const { time, logger, runner } = setup(() => [resolvedJob({ run: () => new Promise(() => {}) })], {
        shutdownGraceMs: 1_000,
      });
      await runner.start();
      await time.advance(1_000);
      const stopped = runner.stop();
      await time.advance(2_000);
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
      const { time, store, probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })]);
      store.skewMs = -5_000;
      await runner.start();
      await time.advance(1_000); // fires 02:00:01, which the store reaches only in 5 s
      await runner.stop();
      expect(probe.calls).toHaveLength(0);
      expect(logger.fires()).toEqual([expect.objectContaining({ outcome: 'skipped', reason: 'shutdown' })]);
    });
  });

  it('stays up through a store outage: the occurrences of the outage run once it is back, within their deadline', async () => {
    const { time, store, probe, logger, runner } = setup((probe) => [
      resolvedJob({ run: probe.run, overlap: 'buffer-all' }),
    ]);
    await runner.start();
    store.down = true;
    await time.advance(2_000);
    store.down = false;
    await time.advance(3_000);
    await runner.stop();
    const fires = logger.fires().map((line) => [line.scheduledAt, line.outcome, line.reason]);
    for (const second of [1, 2, 3, 4, 5]) {
      expect(fires).toContainEqual([`2026-01-01T02:00:0${second}.000Z`, 'success', undefined]);
    }
    expect(fires.filter((fire) => fire[1] !== 'success')).toEqual([]);
    expect(probe.calls).toHaveLength(5);
  });

  it('skips the fires of an outage longer than their starting deadline as store-unavailable, and stays up', async () => {
    const { time, store, probe, logger, runner } = setup((probe) => [
      resolvedJob({ run: probe.run, startingDeadlineMs: 1_000 }),
    ]);
    await runner.start();
    store.down = true;
    await time.advance(3_000);
    store.down = false;
    await time.advance(2_000);
    await runner.stop();
    const fires = logger.fires().map((line) => [line.scheduledAt, line.outcome, line.reason]);
    expect(fires).toContainEqual(['2026-01-01T02:00:01.000Z', 'skipped', 'store-unavailable']);
    expect(fires).toContainEqual(['2026-01-01T02:00:05.000Z', 'success', undefined]);
    expect(probe.calls.length).toBeGreaterThanOrEqual(1);
  });

  it('schedules only the named jobs (a disabled one too) and rejects an unknown name', async () => {
    const store = new ControlledStore(new FakeTimeProvider(start));
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
  it('runs the job now through its pipeline and reports a held lease as skipped (overlap)', async () => {
    const time = new FakeTimeProvider(start);
    const store = new ControlledStore(time);
    const probe = new JobProbe(time, store);
    const config = resolvedConfig(store, [resolvedJob({ run: probe.run })]);
    const logger = new RecordingLogger();
    const options = { timeProvider: time };
    expect(await runJobNow(config, 'report', logger, options)).toEqual({
      outcome: 'success',
      token: 1,
      attempts: 1,
    });
    expect(probe.calls).toHaveLength(1);
    await store.acquire('report', 'elsewhere', 60_000);
    expect(await runJobNow(config, 'report', logger, options)).toEqual({
      outcome: 'skipped',
      reason: 'overlap',
    });
    await expect(runJobNow(config, 'nope', logger, options)).rejects.toMatchObject({ code: 'UNKNOWN_JOB' });
  });
});

/** A logger that also keeps the bindings of every child it hands out (a job's firer takes one). */
class ChildTrackingLogger extends RecordingLogger {
  constructor(
    readonly children: Array<Record<string, unknown>> = [],
    lines: RecordingLogger['lines'] = [],
    bindings: Record<string, unknown> = {},
  ) {
    super(lines, bindings);
  }
  override child(bindings: Record<string, unknown>): ChildTrackingLogger {
    this.children.push(bindings);
    return new ChildTrackingLogger(this.children, this.lines, { ...this.bindings, ...bindings });
  }
}

/** `m h * * *` schedules, spread over the day but never in 02:xx UTC (these tests' first hour). */
const idleSchedules = (count: number) =>
  Array.from({ length: count }, (_, i) => `${(i * 7) % 60} ${3 + ((i * 11) % 20)} * * *`);

/** A store whose claims wait until `open()`: how many it was asked for at most at once. */
class GatedStore extends ControlledStore {
  #gate: Promise<void> | undefined;
  #open: (() => void) | undefined;
  inFlight = 0;
  maxInFlight = 0;
  constructor(time: FakeTimeProvider) {
    super(time);
    this.#gate = new Promise((resolve) => (this.#open = resolve));
  }
  open(): void {
    this.#open?.();
    this.#gate = undefined;
  }
  override async claimOccurrence(request: Parameters<ControlledStore['claimOccurrence']>[0]) {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await this.#gate;
      return await super.claimOccurrence(request);
    } finally {
      this.inFlight--;
    }
  }
}

describe('JobRunner: many jobs due at one instant', () => {
  /** 1,000 jobs due at 02:00:01 (or `jobsOf`'s) on a store whose claims wait (unless `open`), a second in. */
  const dueTogether = async (
    jobsOf = (probe: JobProbe) =>
      Array.from({ length: 1_000 }, (_, i) =>
        resolvedJob({ name: `tenant-${i}`, schedule: '1 0 2 * * *', run: probe.run }),
      ),
    { open = false } = {},
  ) => {
    const time = new FakeTimeProvider(start + 300);
    const store = new GatedStore(time);
    if (open) store.open();
    const probe = new JobProbe(time, store);
    const logger = new RecordingLogger();
    const runner = new JobRunner({
      config: resolvedConfig(store, jobsOf(probe)),
      logger,
      timeProvider: time,
    });
    await runner.start();
    await time.advance(1_000);
    return { time, store, probe, logger, runner };
  };

  it('claims a bounded number at a time and runs every occurrence once', async () => {
    const { time, store, probe, logger, runner } = await dueTogether();
    // The store's answers have not come: a hundred claims asked, the rest wait their turn.
    expect(store.maxInFlight).toBe(100);
    store.open();
    await time.advance(1_000);
    await runner.stop();
    const names = probe.calls.map((call) => call.ctx.job);
    expect(new Set(names).size).toBe(1_000);
    expect(names).toHaveLength(1_000);
    expect(logger.fires().filter((line) => line.outcome === 'success')).toHaveLength(1_000);
  });

  it('fires sleeping through a jitter before their claim hold back no other fire', async () => {
    // 300 jobs spread over the minute after their instant, and one without a jitter a second later.
    const { time, probe, runner } = await dueTogether(
      (probe) => [
        ...Array.from({ length: 300 }, (_, i) =>
          resolvedJob({ name: `spread-${i}`, schedule: '1 0 2 * * *', jitterMs: 50_000, run: probe.run }),
        ),
        resolvedJob({ name: 'on-time', schedule: '2 0 2 * * *', run: probe.run }),
      ],
      { open: true },
    );
    await time.advance(1_000);
    const call = probe.calls.find((each) => each.ctx.job === 'on-time');
    expect(call?.startedAt).toBe(Date.parse('2026-01-01T02:00:02.000Z'));
    await runner.stop();
  });

  it('starts a long run of held fires of jobs without a lock one after another, not nested', async () => {
    // 200 claims answered late hold back the fires after them: 30,000 jobs without a lock, each of
    // which ends its wait for a claim at once when started.
    const { time, store, probe, logger, runner } = await dueTogether((probe) => [
      ...Array.from({ length: 200 }, (_, i) =>
        resolvedJob({ name: `locked-${i}`, schedule: '1 0 2 * * *', run: probe.run }),
      ),
      ...Array.from({ length: 30_000 }, (_, i) =>
        resolvedJob({ name: `unlocked-${i}`, schedule: '1 0 2 * * *', lock: false, run: probe.run }),
      ),
    ]);
    // Those due before the 200 ran (each instance starts from its own place in the list); the rest wait.
    expect(probe.calls.length).toBeLessThan(30_000);
    store.open();
    await time.advance(1_000);
    await runner.stop();
    expect(new Set(probe.calls.map((call) => call.ctx.job)).size).toBe(30_200);
    expect(logger.fires().filter((line) => line.outcome === 'success')).toHaveLength(30_200);
  });

  it('on a fleet, each instance claims its own share of the burst first, then the rest', async () => {
    const time = new FakeTimeProvider(start + 300);
    /** Each claim as the store answered it: the asking instance and the job. */
    const claims: Array<{ instance: string; job: string }> = [];
    const store = new (class extends MemoryLockStore {
      override async claimOccurrence(request: Parameters<MemoryLockStore['claimOccurrence']>[0]) {
        const result = await super.claimOccurrence(request);
        claims.push({ instance: request.instance, job: request.job });
        return result;
      }
    })({ timeProvider: time });
    const probe = new JobProbe(time);
    // Every 50th without a lock: each instance runs it, and starts it at once, within the wake.
    const jobs = Array.from({ length: 1_000 }, (_, i) =>
      resolvedJob({
        name: `tenant-${i}`,
        schedule: '10 0 2 * * *',
        ...(i % 50 === 0 ? { lock: false as const } : {}),
        run: probe.run,
      }),
    );
    const locked = jobs.filter((job) => job.lock !== false);
    const instances = ['a', 'b', 'c'];
    const runner = (instance: string, only?: string[]) =>
      new JobRunner({
        config: resolvedConfig(store, jobs, { instance }),
        logger: new RecordingLogger(),
        timeProvider: time,
        jobs: only,
      });
    // A fourth instance runs one job only: it takes no share of the others' burst.
    const runners = [...instances.map((instance) => runner(instance)), runner('one-job', ['tenant-1'])];
    for (const each of runners) await each.start();
    // A heartbeat later, each has read the registry with the others in it; the jobs are due at 02:00:10.
    await time.advance(10_000);
    await time.advance(1_000);
    for (const each of runners) await each.stop();

    const ran = probe.calls.map((call) => call.ctx.job);
    expect(new Set(ran).size).toBe(1_000);
    expect(ran).toHaveLength(locked.length + 3 * (jobs.length - locked.length));
    for (const instance of instances) {
      const own = new Set(
        locked.filter((job) => firstClaimer(job.name, instances) === instance).map((job) => job.name),
      );
      expect(own.size).toBeGreaterThan(250);
      const asked = claims.filter((claim) => claim.instance === instance);
      // Its share first, then the others' jobs.
      expect(asked.slice(0, own.size).every((claim) => own.has(claim.job))).toBe(true);
      expect(asked.slice(own.size).some((claim) => own.has(claim.job))).toBe(false);
    }
  });

  it('stopped while fires wait their turn: each of them logs its skip (shutdown), none is lost', async () => {
    const { time, store, probe, logger, runner } = await dueTogether();
    const stopped = runner.stop();
    store.open();
    await time.advance(1_000);
    await stopped;
    const fires = logger.fires();
    expect(new Set(fires.map((line) => line.job)).size).toBe(1_000);
    expect(fires).toHaveLength(1_000);
    // The claims already asked may have been granted before the stop reached them; no other.
    const ran = fires.filter((line) => line.outcome === 'success').length;
    expect(ran).toBe(probe.calls.length);
    expect(ran).toBeLessThanOrEqual(100);
    expect(fires.filter((line) => line.reason === 'shutdown')).toHaveLength(1_000 - ran);
  });
});

/** An every-2-seconds job run for the first 4 s after `start + 300`: it fires at 2 s and 4 s. */
async function runEveryTwoSeconds(time: FakeTimeProvider, store: ControlledStore): Promise<JobProbe> {
  const probe = new JobProbe(time, store);
  const runner = new JobRunner({
    config: resolvedConfig(store, [resolvedJob({ schedule: '*/2 * * * * *', run: probe.run })]),
    logger: new RecordingLogger(),
    timeProvider: time,
  });
  await runner.start();
  await time.advance(4_000);
  await runner.stop();
  return probe;
}

describe('JobRunner: one timer', () => {
  it("calls the store's warmUp a few ms before each instant its jobs claim at, and fires on the instant", async () => {
    const time = new FakeTimeProvider(start + 300);
    const store = new ControlledStore(time);
    const warmedAt: number[] = [];
    Object.assign(store, {
      warmUp: async () => {
        warmedAt.push(time.now() - start);
        throw new Error('a warm-up that fails delays nothing');
      },
    });
    const probe = await runEveryTwoSeconds(time, store);
    expect(warmedAt).toEqual([1_995, 3_995]);
    expect(scheduledTimes(probe)).toEqual(['2026-01-01T02:00:02.000Z', '2026-01-01T02:00:04.000Z']);
  });

  it('wakes 5 ms before each instant with a store that has no warmUp too, and fires on the instant', async () => {
    const time = new FakeTimeProvider(start + 300);
    const store = new ControlledStore(time);
    expect('warmUp' in store).toBe(false);
    // The instants (ms after start) at which a timer's callback begins.
    const wokeAt: number[] = [];
    const setTimeout = time.setTimeout.bind(time);
    time.setTimeout = (callback, ms) =>
      setTimeout(() => {
        wokeAt.push(time.now() - start);
        callback();
      }, ms);
    const probe = await runEveryTwoSeconds(time, store);
    expect(wokeAt.filter((at) => at % 2_000 >= 1_990)).toEqual([1_995, 3_995]);
    expect(wokeAt).toEqual(expect.arrayContaining([2_000, 4_000]));
    expect(scheduledTimes(probe)).toEqual(['2026-01-01T02:00:02.000Z', '2026-01-01T02:00:04.000Z']);
  });

  it('schedules many jobs on one timer and builds a job pipeline only when the job first fires', async () => {
    const time = new FakeTimeProvider(start + 300);
    const store = new ControlledStore(time);
    const probe = new JobProbe(time, store);
    const logger = new ChildTrackingLogger();
    const jobs = [
      ...idleSchedules(1_000).map((schedule, i) =>
        resolvedJob({ name: `idle-${i}`, schedule, run: probe.run }),
      ),
      resolvedJob({ name: 'busy', schedule: '*/2 * * * * *', run: probe.run }),
    ];
    const runner = new JobRunner({ config: resolvedConfig(store, jobs), logger, timeProvider: time });
    await runner.start();
    // The fire queue's timer and the store clock's refresh: none per job.
    expect(time.pendingTimers).toBe(2);
    await time.advance(4_000);
    expect(scheduledTimes(probe)).toEqual(['2026-01-01T02:00:02.000Z', '2026-01-01T02:00:04.000Z']);
    // A job's firer (and its log lines) take a child logger bound to the job: idle ones have none.
    const jobsWithChildren = new Set(logger.children.map((bindings) => bindings.job).filter(Boolean));
    expect([...jobsWithChildren]).toEqual(['busy']);

    const started = logger.lines.find((line) => line.msg?.startsWith('runner started'));
    expect(started).toMatchObject({
      msg: 'runner started: 1001 job(s) scheduled',
      jobCount: 1_001,
      earliest: { job: 'busy', nextRun: '2026-01-01T02:00:02.000Z' },
    });
    expect(started).not.toHaveProperty('jobs');
    expect(JSON.stringify(started).length).toBeLessThan(500);
    const listed = logger.lines.find((line) => line.msg === 'scheduled jobs')!;
    expect(listed.level).toBe('debug');
    expect(listed.jobs).toHaveLength(1_001);
    expect((listed.jobs as unknown[])[0]).toEqual({
      name: 'idle-0',
      schedule: '0 3 * * *',
      timezone: 'UTC',
      nextRun: '2026-01-01T03:00:00.000Z',
      lock: 'idle-0',
    });
    await runner.stop();
    expect(time.pendingTimers).toBe(0);
  });

  it("a fire on its instant asks the store before croner looks for the schedule's next instant", async () => {
    const { time, store, runner } = setup((probe) => [resolvedJob({ run: probe.run })]);
    const order: string[] = [];
    const claim = store.claimOccurrence.bind(store);
    store.claimOccurrence = (request) => {
      order.push(`claim ${new Date(request.scheduledAt).toISOString()}`);
      return claim(request);
    };
    const nextAfter = JobSchedule.prototype.nextAfter;
    const spy = vi.spyOn(JobSchedule.prototype, 'nextAfter').mockImplementation(function (
      this: JobSchedule,
      instant: number,
    ) {
      order.push(`next after ${new Date(instant).toISOString()}`);
      return nextAfter.call(this, instant);
    });
    try {
      await runner.start();
      order.length = 0;
      await time.advance(1_000);
      // Croner takes a few hundred microseconds to find an instant: the fire does not wait for it.
      expect(order).toEqual(['claim 2026-01-01T02:00:01.000Z', 'next after 2026-01-01T02:00:01.000Z']);
    } finally {
      spy.mockRestore();
      await runner.stop();
    }
  });

  it('a wake up to a second late fires its instant, then the next one on its own instant: none missed, none twice', async () => {
    // The wake for 02:00:02 comes at 02:00:02.999.
    const { probe, logger } = await lateWake(999, 1);
    expect(scheduledTimes(probe)).toEqual(firstThreeSeconds);
    expect(logger.fires().map((line) => line.lateMs)).toEqual([0, 999, 0]);
    expect(logger.lines.some((line) => line.reason === 'missed')).toBe(false);
  });

  it('a schedule whose next instant cannot be computed after a fire says so: the job fires no more, the others go on', async () => {
    const { time, probe, logger, runner } = setup((probe) => [
      resolvedJob({ name: 'broken', run: probe.run }),
      resolvedJob({ name: 'fine', schedule: '*/2 * * * * *', run: probe.run }),
    ]);
    await runner.start();
    const nextAfter = JobSchedule.prototype.nextAfter;
    const spy = vi.spyOn(JobSchedule.prototype, 'nextAfter').mockImplementation(function (
      this: JobSchedule,
      instant: number,
    ) {
      if (this.schedule === '* * * * * *') throw new Error('no next instant');
      return nextAfter.call(this, instant);
    });
    try {
      await time.advance(3_700);
    } finally {
      spy.mockRestore();
      await runner.stop();
    }
    expect(probe.calls.map((call) => [call.ctx.job, call.ctx.scheduledAt.toISOString()])).toEqual([
      ['broken', '2026-01-01T02:00:01.000Z'],
      ['fine', '2026-01-01T02:00:02.000Z'],
      ['fine', '2026-01-01T02:00:04.000Z'],
    ]);
    expect(logger.lines.filter((line) => line.level === 'error')).toMatchObject([
      { job: 'broken', msg: 'the next instant of the schedule could not be computed: the job fires no more' },
    ]);
  });

  it('never fires an occurrence before its instant when its timer fires early', async () => {
    const time = new RecordingTimeProvider(start + 300);
    time.earlyByMs = 400;
    const { probe, logger, runner } = setup((probe) => [resolvedJob({ run: probe.run })], { time });
    await runner.start();
    await time.advance(3_000);
    await runner.stop();
    expect(scheduledTimes(probe)).toEqual(firstThreeSeconds);
    expect(logger.fires().map((line) => line.lateMs)).toEqual([0, 0, 0]);
  });

  it('notices a wall clock stepped forward within 1 s, and fires the occurrence it stepped over', async () => {
    const { time, probe, logger, runner } = setup((probe) => [
      resolvedJob({ run: probe.run, schedule: '0 3 * * *', startingDeadlineMs: 60_000 }),
    ]);
    await runner.start();
    await time.advance(10_000);
    time.setNow(Date.parse('2026-01-01T03:00:05.000Z')); // NTP corrects a clock an hour slow
    await time.advance(1_000);
    expect(scheduledTimes(probe)).toEqual(['2026-01-01T03:00:00.000Z']);
    expect(probe.calls[0]!.startedAt).toBeLessThanOrEqual(Date.parse('2026-01-01T03:00:06.000Z'));
    expect(logger.lines.find((line) => line.msg?.startsWith('the wall clock stepped forward'))).toMatchObject(
      { level: 'info', stepMs: expect.any(Number) },
    );
    await runner.stop();
  });

  it('waits for a wall clock stepped back: no occurrence early, none twice', async () => {
    const { time, probe, runner } = setup((probe) => [
      resolvedJob({ run: probe.run, schedule: '*/10 * * * * *' }),
    ]);
    await runner.start();
    await time.advance(10_000); // fires 02:00:10
    time.setNow(time.now() - 30_000); // 01:59:40.3
    await time.advance(29_000);
    expect(scheduledTimes(probe)).toEqual(['2026-01-01T02:00:10.000Z']);
    await time.advance(11_000);
    await runner.stop();
    expect(scheduledTimes(probe)).toEqual(['2026-01-01T02:00:10.000Z', '2026-01-01T02:00:20.000Z']);
    expect(probe.calls.every((call) => call.startedAt >= call.ctx.scheduledAt.getTime())).toBe(true);
  });
});

describe('JobRunner: DST (2027, both policies)', () => {
  const jobsIn = (timezone: string) => (probe: JobProbe) => [
    resolvedJob({ name: 'shifted', schedule: '30 2 * * *', timezone, run: probe.run }),
    resolvedJob({ name: 'skipped', schedule: '30 2 * * *', timezone, dst: 'skip', run: probe.run }),
    resolvedJob({ name: 'early', schedule: '30 1 * * *', timezone, run: probe.run }),
    resolvedJob({ name: 'hourly', schedule: '0 * * * *', timezone, run: probe.run }),
  ];

  /** Each job's fires over the 28 hours after `from` (00:00 local on the day of the change). */
  async function firesOver28Hours(timezone: string, from: string) {
    const { time, probe, runner } = setup(jobsIn(timezone), {
      time: new FakeTimeProvider(Date.parse(from) + 300),
    });
    await runner.start();
    await time.advance(28 * 3_600_000);
    await runner.stop();
    const of = (job: string) =>
      probe.calls.filter((call) => call.ctx.job === job).map((call) => call.ctx.scheduledAt.toISOString());
    return { shifted: of('shifted'), skipped: of('skipped'), early: of('early'), hourly: of('hourly') };
  }
  const hoursFrom = (from: string, count: number) =>
    Array.from({ length: count }, (_, i) => new Date(Date.parse(from) + (i + 1) * 3_600_000).toISOString());

  it("Berlin, March 28 (02:00 CET jumps to 03:00 CEST): 02:30 runs at 03:00 CEST with 'shift', not that day with 'skip'; the hourly job once per real hour", async () => {
    const fires = await firesOver28Hours('Europe/Berlin', '2027-03-27T23:00:00.000Z'); // 00:00 CET
    expect(fires.shifted).toEqual(['2027-03-28T01:00:00.000Z', '2027-03-29T00:30:00.000Z']);
    expect(fires.skipped).toEqual(['2027-03-29T00:30:00.000Z']);
    expect(fires.early).toEqual(['2027-03-28T00:30:00.000Z', '2027-03-28T23:30:00.000Z']);
    // 01:00 CET, then 03:00 CEST (01:00 UTC): no local 02:00, no real hour without its fire.
    expect(fires.hourly).toEqual(hoursFrom('2027-03-27T23:00:00.000Z', 28));
  });

  it('Berlin, October 31 (03:00 CEST falls back to 02:00 CET): the doubled 02:30 runs once, at its first pass, with either policy; the hourly job once per real hour', async () => {
    const fires = await firesOver28Hours('Europe/Berlin', '2027-10-30T22:00:00.000Z'); // 00:00 CEST
    // 02:30 CEST, the first pass; not again at 02:30 CET (01:30 UTC). Then 02:30 CET on Nov 1.
    for (const job of [fires.shifted, fires.skipped]) {
      expect(job).toEqual(['2027-10-31T00:30:00.000Z', '2027-11-01T01:30:00.000Z']);
    }
    expect(fires.hourly).toEqual(hoursFrom('2027-10-30T22:00:00.000Z', 28));
  });

  it("New York, March 14 (02:00 EST jumps to 03:00 EDT): 02:30 runs at 03:00 EDT with 'shift', not that day with 'skip'", async () => {
    const fires = await firesOver28Hours('America/New_York', '2027-03-14T05:00:00.000Z'); // 00:00 EST
    expect(fires.shifted).toEqual(['2027-03-14T07:00:00.000Z', '2027-03-15T06:30:00.000Z']);
    expect(fires.skipped).toEqual(['2027-03-15T06:30:00.000Z']);
    expect(fires.hourly).toEqual(hoursFrom('2027-03-14T05:00:00.000Z', 28));
  });

  it('logs at start, once per job, each DST transition of the next 12 months that touches its fixed time, and what will happen', async () => {
    const { logger, runner } = setup(jobsIn('Europe/Berlin'), {
      time: new FakeTimeProvider(Date.parse('2027-01-01T00:00:00.000Z')),
    });
    await runner.start();
    await runner.stop();
    const dstLines = logger.lines.filter((line) => line.msg?.startsWith('DST: '));
    expect(dstLines.map((line) => [line.level, line.job])).toEqual([
      ['info', 'shifted'],
      ['warn', 'skipped'],
    ]);
    expect(dstLines[0]).toMatchObject({
      timezone: 'Europe/Berlin',
      dst: 'shift',
      transitions: [
        { date: '2027-03-28', kind: 'gap', localTimes: ['02:30'], runsAt: '2027-03-28T01:00:00.000Z' },
        { date: '2027-10-31', kind: 'fold', localTimes: ['02:30'], runsAt: '2027-10-31T00:30:00.000Z' },
      ],
    });
    expect(dstLines[0]!.msg).toBe(
      "DST: on 2027-03-28 02:30 does not exist in Europe/Berlin (clocks spring forward): it runs once right after the gap, at 03:00 CEST (01:00 UTC) (dst: 'shift'); on 2027-10-31 02:30 occurs twice in Europe/Berlin: it runs once, at the first pass: 02:30 CEST (00:30 UTC)",
    );
    expect(dstLines[1]).toMatchObject({
      dst: 'skip',
      transitions: [{ date: '2027-03-28', kind: 'gap', runsAt: null }, { kind: 'fold' }],
    });
    expect(dstLines[1]!.msg).toContain("it does not run for it that day (dst: 'skip')");
  });

  it('New York, November 7 (02:00 EDT falls back to 01:00 EST): the doubled 01:30 runs once, at 01:30 EDT; 02:30 as any day', async () => {
    const fires = await firesOver28Hours('America/New_York', '2027-11-07T04:00:00.000Z'); // 00:00 EDT
    expect(fires.early).toEqual(['2027-11-07T05:30:00.000Z', '2027-11-08T06:30:00.000Z']);
    for (const job of [fires.shifted, fires.skipped]) {
      expect(job).toEqual(['2027-11-07T07:30:00.000Z', '2027-11-08T07:30:00.000Z']);
    }
    expect(fires.hourly).toEqual(hoursFrom('2027-11-07T04:00:00.000Z', 28));
  });
});
