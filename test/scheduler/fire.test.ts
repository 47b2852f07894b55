import { describe, expect, it } from 'vitest';
import type { ResolvedJob } from '../../src/config/types.ts';
import { type FireEnvironment, JobFirer } from '../../src/scheduler/fire.ts';
import { StoreClock } from '../../src/scheduler/store-clock.ts';
import { isStaleTokenError } from '../../src/strategies/lock/errors.ts';
import { isTimeoutRejectedError } from '../../src/strategies/timeout/errors.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';
import { ControlledStore, JobProbe, RecordingLogger, resolvedJob } from './fixtures.ts';

const at = (iso: string) => Date.parse(iso);
const start = at('2026-01-01T02:00:00.000Z');

/** One instance: its clock (shared with the store), its view of the store's clock, its firer. */
async function instance(
  store: ControlledStore,
  job: ResolvedJob,
  { name = 'a', logger = new RecordingLogger() }: { name?: string; logger?: RecordingLogger } = {},
) {
  const time = store.time as FakeTimeProvider;
  const clock = new StoreClock(store, time);
  await clock.sync();
  const environment: FireEnvironment = {
    store,
    ledger: store,
    clock,
    time,
    instance: name,
    ledgerRetentionMs: 86_400_000,
    logger,
  };
  return { firer: new JobFirer(job, environment), logger, clock };
}

function setup(
  job: (probe: JobProbe, store: ControlledStore) => ResolvedJob,
  behaviour: 'immediate' | 'hold' = 'immediate',
) {
  const time = new FakeTimeProvider(start);
  const store = new ControlledStore(time);
  const probe = new JobProbe(time, store, behaviour);
  return { time, store, probe, job: job(probe, store) };
}

describe('JobFirer', () => {
  it('runs the occurrence with its context and records it in the ledger with the fencing token', async () => {
    const { store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    const { firer, logger } = await instance(store, job);

    const result = await firer.fire(start);

    expect(result).toEqual({ outcome: 'success', token: 1, attempts: 1 });
    const { ctx } = probe.calls[0]!;
    expect(ctx.job).toBe('report');
    expect(ctx.scheduledAt).toEqual(new Date(start));
    expect(ctx.attempt).toBe(1);
    expect(ctx.token).toBe(1);
    expect(ctx.signal.aborted).toBe(false);
    expect(await store.isCompleted('report', start)).toBe(true);
    const [record] = await store.runHistory('report');
    expect(record).toMatchObject({
      job: 'report',
      scheduledAt: start,
      outcome: 'success',
      token: 1,
      instance: 'a',
    });
    expect(logger.fires()).toEqual([
      expect.objectContaining({
        level: 'info',
        job: 'report',
        scheduledAt: '2026-01-01T02:00:00.000Z',
        outcome: 'success',
        token: 1,
        attempt: 1,
        durationMs: expect.any(Number),
        lateMs: 0,
      }),
    ]);
  });

  it('skips an occurrence the ledger already holds (already-done), also on another instance', async () => {
    const { time, store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    const a = await instance(store, job, { name: 'a' });
    const b = await instance(store, job, { name: 'b' });

    expect((await a.firer.fire(start)).outcome).toBe('success');
    expect(await b.firer.fire(start)).toMatchObject({ outcome: 'skipped', reason: 'already-done', token: 2 });
    expect(await a.firer.fire(start)).toMatchObject({ outcome: 'skipped', reason: 'already-done' });
    // The next occurrence is a different one.
    await time.advance(1_000);
    expect((await b.firer.fire(start + 1_000)).outcome).toBe('success');
    expect(probe.calls.map((call) => call.ctx.scheduledAt.getTime())).toEqual([start, start + 1_000]);
    expect(b.logger.fires()[0]).toMatchObject({ outcome: 'skipped', reason: 'already-done', job: 'report' });
  });

  it('retries with a 1-based ctx.attempt and records one success', async () => {
    const { time, store, job } = setup(() =>
      resolvedJob({
        run: async (ctx) => {
          attempts.push(ctx.attempt);
          if (ctx.attempt < 3) throw new Error(`flaky ${ctx.attempt}`);
          return 'ok';
        },
        retry: { maxRetryAttempts: 3, delay: 100 },
      }),
    );
    const attempts: number[] = [];
    const { firer, logger } = await instance(store, job);

    const fired = firer.fire(start);
    await time.advance(200);
    expect(await fired).toEqual({ outcome: 'success', token: 1, attempts: 3 });
    expect(attempts).toEqual([1, 2, 3]);
    expect(await store.runHistory('report')).toHaveLength(1);
    expect(logger.lines.filter((line) => line.msg === 'attempt failed, retrying')).toHaveLength(2);
  });

  it('reports a failure after the last attempt, records it as history only, and a later fire may run it', async () => {
    let fail = true;
    const { time, store, job } = setup(() =>
      resolvedJob({
        run: async () => {
          if (fail) throw new Error('connect to redis://app:hunter2@db:6379 refused');
        },
        retry: { maxRetryAttempts: 1, delay: 10 },
      }),
    );
    const { firer, logger } = await instance(store, job);

    const fired = firer.fire(start);
    await time.advance(10);
    const result = await fired;
    expect(result).toMatchObject({ outcome: 'failure', attempts: 2, token: 1 });
    expect((result.error as Error).message).toContain('refused');
    expect(await store.isCompleted('report', start)).toBe(false);
    const [record] = await store.runHistory('report');
    expect(record).toMatchObject({ outcome: 'failure', token: 1 });
    // The ledger never keeps a password from an error message.
    expect(record!.error).toContain('redis://app:[redacted]@db:6379');
    expect(logger.fires()[0]).toMatchObject({ level: 'error', outcome: 'failure', attempt: 2 });

    fail = false;
    expect((await firer.fire(start)).outcome).toBe('success');
  });

  it('skips a fire past its starting deadline as missed, without running the job', async () => {
    const { time, store, probe, job } = setup((probe) =>
      resolvedJob({ run: probe.run, startingDeadlineMs: 5_000 }),
    );
    const { firer, logger } = await instance(store, job);

    await time.advance(5_001);
    expect(await firer.fire(start)).toEqual({ outcome: 'skipped', reason: 'missed' });
    expect(probe.calls).toHaveLength(0);
    expect(logger.fires()[0]).toMatchObject({ outcome: 'skipped', reason: 'missed', lateMs: 5_001 });
    // 4 s late is inside the deadline.
    expect((await firer.fire(start + 1_000)).outcome).toBe('success');
  });

  it('judges the deadline by the store clock: an instance 10 s behind still runs a fire 3 s late by its own clock', async () => {
    const { time, store, probe, job } = setup((probe) =>
      resolvedJob({ run: probe.run, startingDeadlineMs: 5_000 }),
    );
    store.skewMs = 10_000; // the store's clock is 10 s ahead of this instance
    const { firer } = await instance(store, job);
    await time.advance(3_000);
    expect(await firer.fire(start)).toEqual({ outcome: 'skipped', reason: 'missed' });
    expect(probe.calls).toHaveLength(0);
  });

  it('never starts early: an instance 2 s ahead waits until the store clock reaches scheduledAt', async () => {
    const { time, store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    store.skewMs = -2_000; // the instance's clock runs 2 s ahead of the store's
    const { firer, clock } = await instance(store, job);
    expect(clock.offset?.offsetMs).toBe(-2_000);

    // The instance's clock says 02:00:00.000: its croner fires now, but by the store it is 01:59:58.
    const fired = firer.fire(start);
    await time.advance(1_999);
    expect(probe.calls).toHaveLength(0);
    await time.advance(1);
    expect(await fired).toMatchObject({ outcome: 'success' });
    expect(probe.calls).toHaveLength(1);
    expect(probe.calls[0]!.storeNow).toBeGreaterThanOrEqual(start);
    expect(probe.calls[0]!.storeNow! - start).toBeLessThan(5);
  });

  it('never starts early even when the learnt offset is stale (the clock stepped after the sync)', async () => {
    const { time, store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    const { firer } = await instance(store, job); // learns offset 0
    store.skewMs = -1_500; // then the machine's clock jumps 1.5 s ahead of the store
    const fired = firer.fire(start);
    await time.advance(1); // looks due by the stale offset: the store is asked and says 01:59:58.5
    expect(probe.calls).toHaveLength(0);
    await time.advance(1_500);
    expect((await fired).outcome).toBe('success');
    expect(probe.calls[0]!.storeNow).toBeGreaterThanOrEqual(start);
  });

  it('skips a fire while the previous run still holds the lease (lock-held), on this and another instance', async () => {
    const { time, store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }), 'hold');
    const a = await instance(store, job, { name: 'a' });
    const b = await instance(store, job, { name: 'b' });

    const first = a.firer.fire(start);
    await time.advance(1_000); // the run overruns into the next occurrence
    expect(await a.firer.fire(start + 1_000)).toEqual({ outcome: 'skipped', reason: 'lock-held' });
    expect(await b.firer.fire(start + 1_000)).toEqual({ outcome: 'skipped', reason: 'lock-held' });
    expect(probe.calls).toHaveLength(1);
    probe.finishAll();
    expect((await first).outcome).toBe('success');
    expect(a.logger.fires().map((line) => line.reason)).toEqual(['lock-held', undefined]);
  });

  it('with wait >= ttl, a waiting instance takes over the occurrence of a crashed holder', async () => {
    const { time, store, probe, job } = setup((probe) =>
      resolvedJob({ run: probe.run, lock: { key: 'report', ttlMs: 3_000, waitMs: 5_000 } }),
    );
    // The winner took the lease and crashed: nobody renews it, nothing is recorded.
    const crashedToken = await store.acquire('report', 'crashed-owner', 3_000);
    const b = await instance(store, job, { name: 'b' });

    const fired = b.firer.fire(start);
    await time.advance(2_900);
    expect(probe.calls).toHaveLength(0);
    await time.advance(1_100); // the lease expired at 3 s; the next poll takes it
    const result = await fired;
    expect(result).toMatchObject({ outcome: 'success', attempts: 1 });
    expect(result.token).toBeGreaterThan(crashedToken!);
    expect(probe.calls).toHaveLength(1);
    expect(await store.isCompleted('report', start)).toBe(true);
  });

  it('with wait >= ttl, a waiting instance sees already-done when the holder completes', async () => {
    const { time, store, probe, job } = setup(
      (probe) => resolvedJob({ run: probe.run, lock: { key: 'report', ttlMs: 3_000, waitMs: 5_000 } }),
      'hold',
    );
    const a = await instance(store, job, { name: 'a' });
    const b = await instance(store, job, { name: 'b' });

    const first = a.firer.fire(start);
    const second = b.firer.fire(start);
    await time.advance(500);
    probe.finishAll();
    await time.advance(1_000);
    expect((await first).outcome).toBe('success');
    expect(await second).toMatchObject({ outcome: 'skipped', reason: 'already-done' });
    expect(probe.calls).toHaveLength(1);
  });

  it('skips fires while the store is down (store-unavailable) and runs again once it is back', async () => {
    const { store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    const { firer, logger } = await instance(store, job);

    store.down = true;
    const result = await firer.fire(start);
    expect(result).toMatchObject({ outcome: 'skipped', reason: 'store-unavailable' });
    expect(result.error).toBeDefined();
    store.down = false;
    expect((await firer.fire(start)).outcome).toBe('success');
    expect(probe.calls).toHaveLength(1);
    expect(logger.fires().map((line) => [line.level, line.outcome, line.reason])).toEqual([
      ['warn', 'skipped', 'store-unavailable'],
      ['info', 'success', undefined],
    ]);
  });

  it('holds the lease under an owner id that names the instance, and logs the start at debug', async () => {
    const time = new FakeTimeProvider(start);
    const store = new ControlledStore(time);
    let owner: string | undefined;
    const job = resolvedJob({
      run: async () => {
        owner = (await store.inspect('report'))?.owner;
      },
    });
    const { firer, logger } = await instance(store, job, { name: 'web-1' });
    await firer.fire(start);
    expect(owner).toMatch(/^web-1\/[0-9a-f-]{32,36}$/);
    expect(logger.lines.find((line) => line.msg === 'job started')).toMatchObject({
      level: 'debug',
      job: 'report',
      scheduledAt: '2026-01-01T02:00:00.000Z',
      token: 1,
    });
  });

  it('logs a timeout when it fires and tells the caller, though the job ignores its signal', async () => {
    const time = new FakeTimeProvider(start);
    const store = new ControlledStore(time);
    const job = resolvedJob({ timeoutMs: 1_000, retry: false, run: () => new Promise(() => {}) });
    const { firer, logger } = await instance(store, job);
    const aborted: unknown[] = [];
    void firer.fire(start, { kind: 'manual', onAttemptAborted: (reason) => aborted.push(reason) });
    await time.advance(999);
    expect(aborted).toEqual([]);
    await time.advance(1);
    expect(aborted).toHaveLength(1);
    expect(isTimeoutRejectedError(aborted[0])).toBe(true);
    expect(
      logger.lines.find((line) => line.msg === 'attempt timed out: its signal is aborted'),
    ).toMatchObject({
      level: 'warn',
      job: 'report',
      timeoutMs: 1_000,
    });
  });

  it('aborts an attempt on its timeout and fails with TimeoutRejectedError', async () => {
    const { time, store, job } = setup(() =>
      resolvedJob({
        timeoutMs: 1_000,
        run: (ctx) =>
          new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
      }),
    );
    const { firer } = await instance(store, job);
    const fired = firer.fire(start);
    await time.advance(1_000);
    const result = await fired;
    expect(result.outcome).toBe('failure');
    expect(isTimeoutRejectedError(result.error)).toBe(true);
  });

  it('fails a run whose ledger write is refused because a later holder wrote a higher token', async () => {
    const { store, job } = setup(() =>
      resolvedJob({
        run: async () => {
          // Meanwhile (lease lost during a pause) another holder completed a run with a higher token.
          await store.inner.recordRun({
            job: 'report',
            scheduledAt: start - 1_000,
            outcome: 'success',
            token: 99,
            instance: 'b',
            startedAt: start,
            endedAt: start,
          });
        },
      }),
    );
    const { firer } = await instance(store, job);
    const result = await firer.fire(start);
    expect(result.outcome).toBe('failure');
    expect(isStaleTokenError(result.error)).toBe(true);
    expect(await store.isCompleted('report', start)).toBe(false);
  });

  it('without a lock, a fire while the previous run is still going on this instance is skipped', async () => {
    const { time, store, probe, job } = setup(
      (probe) => resolvedJob({ run: probe.run, lock: false }),
      'hold',
    );
    const { firer } = await instance(store, job);
    const first = firer.fire(start);
    await time.advance(1_000);
    expect(await firer.fire(start + 1_000)).toEqual({ outcome: 'skipped', reason: 'lock-held' });
    probe.finishAll();
    expect(await first).toEqual({ outcome: 'success', attempts: 1 });
    expect(probe.calls[0]!.ctx.token).toBeUndefined();
    expect(await store.runHistory('report')).toEqual([]);
  });

  it('a manual run (resil jobs run) runs at once, skips the ledger check and is recorded in history', async () => {
    const { store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    store.skewMs = -2_000;
    const { firer } = await instance(store, job);
    await store.recordRun({
      job: 'report',
      scheduledAt: start,
      outcome: 'success',
      token: 0,
      instance: 'x',
      startedAt: 0,
      endedAt: 0,
    });
    expect(await firer.fire(start, { kind: 'manual' })).toMatchObject({ outcome: 'success', token: 1 });
    expect(probe.calls).toHaveLength(1);
    expect((await store.runHistory('report'))[0]).toMatchObject({ outcome: 'success', token: 1 });
  });

  it('drops a fire aborted while it waits for its instant (shutdown) without running the job', async () => {
    const { time, store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    store.skewMs = -2_000;
    const { firer } = await instance(store, job);
    const controller = new AbortController();
    const fired = firer.fire(start, { signal: controller.signal });
    await time.advance(500);
    controller.abort(new Error('stopping'));
    expect(await fired).toEqual({ outcome: 'skipped', reason: 'shutdown' });
    expect(probe.calls).toHaveLength(0);
    expect(time.pendingTimers).toBe(0);
  });
});
