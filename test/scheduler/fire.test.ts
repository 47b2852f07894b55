import { describe, expect, it } from 'vitest';
import type { ResolvedJob } from '../../src/scheduler/job.ts';
import { InvalidKeyError, isStaleTokenError, StoreSetupError } from '../../src/strategies/lock/errors.ts';
import { isTimeoutRejectedError } from '../../src/strategies/timeout/errors.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';
import { ControlledStore, instanceOf, JobProbe, resolvedJob } from './fixtures.ts';

const at = (iso: string) => Date.parse(iso);
const start = at('2026-01-01T02:00:00.000Z');

const instance = instanceOf;

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
    expect(await store.lastCompleted('report')).toBe(start);
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
    expect(await b.firer.fire(start)).toEqual({ outcome: 'skipped', reason: 'already-done' });
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

  it('reports a failure after the last attempt, records it in the history, and the occurrence is done', async () => {
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
    expect(await store.lastCompleted('report')).toBeUndefined();
    const [record] = await store.runHistory('report');
    expect(record).toMatchObject({ outcome: 'failure', token: 1 });
    // The ledger never keeps a password from an error message.
    expect(record!.error).toContain('redis://app:[redacted]@db:6379');
    expect(logger.fires()[0]).toMatchObject({ level: 'error', outcome: 'failure', attempt: 2 });

    // A failure is final for its occurrence: retries are the pipeline's business, not the next fire's.
    fail = false;
    expect(await firer.fire(start)).toEqual({ outcome: 'skipped', reason: 'already-done' });
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
    // The early answer made it learn the offset again, then wait: no claim every millisecond.
    expect(store.claimCalls).toBeLessThanOrEqual(3);
  });

  it('a finish that hits a store outage is retried, still renewing, while the lease lasts: recorded once, no takeover', async () => {
    const { time, store, job } = setup(() =>
      resolvedJob({
        lock: { key: 'report', ttlMs: 3_000, waitMs: 0 },
        run: async () => {
          store.down = true;
          time.setTimeout(() => {
            store.down = false;
          }, 1_500);
        },
      }),
    );
    const { firer } = await instance(store, job, { name: 'a' });
    const fired = firer.fire(start);
    await time.advance(2_000);
    expect(await fired).toMatchObject({ outcome: 'success', token: 1 });
    expect((await store.runHistory('report'))[0]).toMatchObject({ outcome: 'success', token: 1 });
    const b = await instance(store, job, { name: 'b' });
    await time.advance(5_000);
    expect(await b.firer.fire(start)).toEqual({ outcome: 'skipped', reason: 'already-done' });
  });

  it('skip: a fire while the previous occurrence runs is skipped (overlap) on every instance, and recorded once', async () => {
    const { time, store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }), 'hold');
    const a = await instance(store, job, { name: 'a' });
    const b = await instance(store, job, { name: 'b' });

    const first = a.firer.fire(start);
    await time.advance(1_000); // the run overruns into the next occurrence
    expect(await a.firer.fire(start + 1_000)).toEqual({ outcome: 'skipped', reason: 'overlap' });
    expect(await b.firer.fire(start + 1_000)).toEqual({ outcome: 'skipped', reason: 'already-done' });
    expect(probe.calls).toHaveLength(1);
    probe.finishAll();
    expect((await first).outcome).toBe('success');
    expect(a.logger.fires().map((line) => line.reason)).toEqual(['overlap', undefined]);
    expect((await store.runHistory('report')).map((record) => [record.outcome, record.reason])).toEqual([
      ['skipped', 'overlap'],
      ['success', undefined],
    ]);
  });

  it('takeover by default: a fire of the occurrence watches its crashed holder and runs it within 1 s of the expiry', async () => {
    const { time, store, probe, job } = setup((probe) =>
      resolvedJob({ run: probe.run, lock: { key: 'report', ttlMs: 3_000, waitMs: 0 } }),
    );
    // The holder claimed the occurrence and crashed: nobody renews it, nothing is finished.
    const crashed = await store.claimOccurrence({
      job: 'report',
      key: 'report',
      scheduledAt: start,
      owner: 'crashed/1',
      instance: 'crashed',
      ttlMs: 3_000,
      overlap: 'skip',
      startingDeadlineMs: 60_000,
    });
    if (crashed.status !== 'granted') throw new Error('not granted');
    const b = await instance(store, job, { name: 'b' });

    const fired = b.firer.fire(start);
    await time.advance(2_990);
    expect(probe.calls).toHaveLength(0);
    await time.advance(100); // the lease expired at 3 s; the watcher asks again just after
    const result = await fired;
    expect(result).toMatchObject({ outcome: 'success', attempts: 1 });
    expect(result.token).toBeGreaterThan(crashed.lease.token);
    expect(probe.calls).toHaveLength(1);
    expect(probe.calls[0]!.startedAt - start).toBeLessThanOrEqual(3_000 + 1_000);
    expect(b.logger.fires()[0]).toMatchObject({ outcome: 'success', takeover: true });
    expect((await store.runHistory('report'))[0]).toMatchObject({
      outcome: 'success',
      takeovers: 1,
      instance: 'b',
    });
  });

  it('a watching instance sees already-done when the holder completes', async () => {
    const { time, store, probe, job } = setup(
      (probe) => resolvedJob({ run: probe.run, lock: { key: 'report', ttlMs: 3_000, waitMs: 0 } }),
      'hold',
    );
    const a = await instance(store, job, { name: 'a' });
    const b = await instance(store, job, { name: 'b' });

    const first = a.firer.fire(start);
    const second = b.firer.fire(start);
    await time.advance(500);
    probe.finishAll();
    await time.advance(3_100);
    expect((await first).outcome).toBe('success');
    expect(await second).toMatchObject({ outcome: 'skipped', reason: 'already-done' });
    expect(probe.calls).toHaveLength(1);
  });

  it('a watcher whose store forgot the running occurrence (restart without persistence) does not run it again', async () => {
    const { time, store, probe, job } = setup(
      (probe) => resolvedJob({ run: probe.run, lock: { key: 'report', ttlMs: 3_000, waitMs: 0 } }),
      'hold',
    );
    const a = await instance(store, job, { name: 'a' });
    const b = await instance(store, job, { name: 'b' });
    const first = a.firer.fire(start);
    const watcher = b.firer.fire(start);
    await time.advance(200);
    store.reset();
    await time.advance(3_000);
    expect(await watcher).toEqual({ outcome: 'skipped', reason: 'store-reset' });
    expect(probe.calls).toHaveLength(1);
    expect((await store.runHistory('report'))[0]).toMatchObject({ outcome: 'failure' });
    probe.finishAll();
    await first;
  });

  it('buffer-all: fires wait for the running occurrence and run one by one, oldest first', async () => {
    const order: number[] = [];
    const { time, store, job } = setup(() =>
      resolvedJob({
        overlap: 'buffer-all',
        run: async (ctx) => {
          order.push(ctx.scheduledAt.getTime());
          await new Promise<void>((resolve) => time.setTimeout(resolve, 2_500));
        },
      }),
    );
    const a = await instance(store, job, { name: 'a' });
    const b = await instance(store, job, { name: 'b' });
    const fires = [a.firer.fire(start)];
    for (let index = 1; index <= 3; index++) {
      await time.advance(1_000);
      fires.push(b.firer.fire(start + index * 1_000), a.firer.fire(start + index * 1_000));
    }
    // The other instance's fires of the same occurrences watch the holder until its lease expires.
    await time.advance(45_000);
    const results = await Promise.all(fires);
    expect(order).toEqual([start, start + 1_000, start + 2_000, start + 3_000]);
    expect(results.filter((result) => result.outcome === 'success')).toHaveLength(4);
    expect(results.filter((result) => result.outcome === 'skipped').map((result) => result.reason)).toEqual([
      'already-done',
      'already-done',
      'already-done',
    ]);
  });

  it("a fire queued behind a running occurrence starts when the holder finishes, woken by the store's release", async () => {
    /** When (fake time) instance b's queued occurrence starts, with or without wake-ups. */
    const queuedStart = async (wakeUps: boolean) => {
      const starts = new Map<number, number>();
      const { time, store, job } = setup(() =>
        resolvedJob({
          overlap: 'buffer-one',
          run: async (ctx) => {
            starts.set(ctx.scheduledAt.getTime(), time.now());
            await new Promise<void>((resolve) => time.setTimeout(resolve, 10_000));
          },
        }),
      );
      if (wakeUps) store.onRelease = (key, listener) => store.inner.onRelease(key, listener);
      const a = await instance(store, job, { name: 'a' });
      const b = await instance(store, job, { name: 'b' });
      const first = a.firer.fire(start);
      await time.advance(1_000);
      const queued = b.firer.fire(start + 1_000);
      await time.advance(30_000);
      expect(await Promise.all([first, queued])).toMatchObject([
        { outcome: 'success' },
        { outcome: 'success' },
      ]);
      return starts.get(start + 1_000)! - start;
    };
    // The holder finishes 10 s in: woken, the queued fire claims at that instant.
    expect(await queuedStart(true)).toBe(10_000);
    // Polling alone it starts at its next poll, later.
    expect(await queuedStart(false)).toBeGreaterThan(10_000);
  });

  it('cancel-other: a new fire aborts the running occurrence at its next renewal, then runs', async () => {
    const { time, store, probe, job } = setup(
      (probe) =>
        resolvedJob({
          run: probe.run,
          overlap: 'cancel-other',
          lock: { key: 'report', ttlMs: 3_000, waitMs: 0 },
        }),
      'hold',
    );
    const a = await instance(store, job, { name: 'a' });
    const b = await instance(store, job, { name: 'b' });
    const first = a.firer.fire(start);
    await time.advance(1_000);
    const second = b.firer.fire(start + 1_000);
    await time.advance(1_100); // a renews at 1 s after its claim and learns it was cancelled
    const cancelled = await first;
    expect(cancelled.outcome).toBe('failure');
    await time.advance(1_000);
    expect(probe.calls).toHaveLength(2);
    probe.finishAll();
    expect(await second).toMatchObject({ outcome: 'success' });
    const history = await store.runHistory('report');
    expect(history[1]).toMatchObject({ scheduledAt: start, outcome: 'failure' });
    expect(history[1]!.error).toMatch(/cancel/);
  });

  it('allow-all: occurrences run concurrently under their own leases and tokens', async () => {
    const { time, store, probe, job } = setup(
      (probe) => resolvedJob({ run: probe.run, overlap: 'allow-all' }),
      'hold',
    );
    const a = await instance(store, job, { name: 'a' });
    const first = a.firer.fire(start);
    await time.advance(1_000);
    const second = a.firer.fire(start + 1_000);
    await time.advance(10);
    expect(probe.calls.map((call) => call.ctx.token)).toEqual([1, 2]);
    probe.finishAll();
    expect((await first).outcome).toBe('success');
    expect((await second).outcome).toBe('success');
  });

  it('asks a store that did not answer again, with backoff, and runs the occurrence once it answers', async () => {
    const { time, store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    const { firer, logger } = await instance(store, job);

    store.down = true;
    const fired = firer.fire(start);
    await time.advance(3_000);
    // Backoff from 100 ms, doubling, each pause drawn between half and all of it: 3 to 6 claims
    // in 3 s, not one per poll tick.
    expect(store.claimCalls).toBeGreaterThanOrEqual(3);
    expect(store.claimCalls).toBeLessThanOrEqual(6);
    expect(probe.calls).toHaveLength(0);
    store.down = false;
    await time.advance(2_000);
    const result = await fired;
    expect(result).toMatchObject({ outcome: 'success', token: 1 });
    expect(probe.calls).toHaveLength(1);
    expect(logger.fires().map((line) => [line.level, line.outcome, line.reason])).toEqual([
      ['info', 'success', undefined],
    ]);
  });

  it('skips as store-unavailable once the store has not answered until the starting deadline', async () => {
    const { time, store, probe, job } = setup((probe) =>
      resolvedJob({ run: probe.run, startingDeadlineMs: 5_000 }),
    );
    const { firer, logger } = await instance(store, job);

    store.down = true;
    let settledAt = Number.NaN;
    const fired = firer.fire(start).finally(() => (settledAt = time.now()));
    await time.advance(5_000);
    const result = await fired;
    expect(result).toMatchObject({ outcome: 'skipped', reason: 'store-unavailable' });
    expect(result.error).toBeDefined();
    // Given up before the deadline, not after it: the last pause would have ended past it.
    expect(settledAt).toBeGreaterThan(start + 2_000);
    expect(settledAt).toBeLessThan(start + 5_000);
    expect(probe.calls).toHaveLength(0);
    expect(logger.fires().map((line) => [line.level, line.outcome, line.reason])).toEqual([
      ['warn', 'skipped', 'store-unavailable'],
    ]);
    store.down = false;
    expect((await firer.fire(time.now())).outcome).toBe('success');
  });

  it('answers a manual run at once when the store does not (the caller is waiting)', async () => {
    const { store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    const { firer } = await instance(store, job);
    store.down = true;
    const result = await firer.fire(start, { kind: 'manual' });
    expect(result).toMatchObject({ outcome: 'skipped', reason: 'store-unavailable' });
    expect(store.claimCalls).toBe(1);
    expect(probe.calls).toHaveLength(0);
  });

  it('a store that is not set up skips as store-setup, at error; a key it cannot keep fails the fire: neither is store-unavailable', async () => {
    const { store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    const { firer, logger } = await instance(store, job);

    store.failure = new StoreSetupError('schema "ops" does not exist (3F000). Create it.');
    expect(await firer.fire(start)).toMatchObject({
      outcome: 'skipped',
      reason: 'store-setup',
      error: store.failure,
    });
    store.failure = new InvalidKeyError('SomeStore', 'key', 'report', 'it is too long');
    expect(await firer.fire(start)).toMatchObject({ outcome: 'failure', error: store.failure });
    store.failure = undefined;
    expect((await firer.fire(start)).outcome).toBe('success');
    expect(probe.calls).toHaveLength(1);
    expect(logger.fires().map((line) => [line.level, line.outcome, line.reason, line.msg])).toEqual([
      [
        'error',
        'skipped',
        'store-setup',
        'fire skipped: the store is not set up: StoreSetupError: schema "ops" does not exist (3F000). Create it.',
      ],
      ['error', 'failure', undefined, 'job failed'],
      ['info', 'success', undefined, 'job succeeded'],
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

  it('fails a run whose finish is refused because another instance took the occurrence over (higher token)', async () => {
    const { time, store, job } = setup(() =>
      resolvedJob({
        lock: { key: 'report', ttlMs: 3_000, waitMs: 0 },
        run: async () => {
          // This instance freezes past its ttl; another one takes the occurrence over meanwhile.
          store.down = true;
          await new Promise<void>((resolve) => time.setTimeout(resolve, 4_000));
          store.down = false;
          const other = await store.claimOccurrence({
            job: 'report',
            key: 'report',
            scheduledAt: start,
            owner: 'b/1',
            instance: 'b',
            ttlMs: 3_000,
            overlap: 'skip',
            startingDeadlineMs: 60_000,
          });
          expect(other).toMatchObject({ status: 'granted', takeover: true });
        },
      }),
    );
    const { firer } = await instance(store, job);
    const fired = firer.fire(start);
    await time.advance(4_000);
    const result = await fired;
    expect(result.outcome).toBe('failure');
    // The lease was lost first (no renewal reached the store); the refused finish is its cause.
    expect(result.error).toMatchObject({ code: 'LOCK_LOST' });
    expect(isStaleTokenError((result.error as Error).cause)).toBe(true);
    expect((await store.runHistory('report'))[0]).toMatchObject({ outcome: 'running', instance: 'b' });
  });

  it('without a lock, a fire while the previous run is still going on this instance is skipped', async () => {
    const { time, store, probe, job } = setup(
      (probe) => resolvedJob({ run: probe.run, lock: false }),
      'hold',
    );
    const { firer } = await instance(store, job);
    const first = firer.fire(start);
    await time.advance(1_000);
    expect(await firer.fire(start + 1_000)).toEqual({ outcome: 'skipped', reason: 'overlap' });
    probe.finishAll();
    expect(await first).toEqual({ outcome: 'success', attempts: 1 });
    expect(probe.calls[0]!.ctx.token).toBeUndefined();
    expect(await store.runHistory('report')).toEqual([]);
  });

  it('without a lock, concurrency bounds the runs going on this instance', async () => {
    const { time, store, probe, job } = setup(
      (probe) => resolvedJob({ run: probe.run, lock: false, concurrency: 2 }),
      'hold',
    );
    const { firer } = await instance(store, job);
    const first = firer.fire(start);
    await time.advance(1_000);
    const second = firer.fire(start + 1_000);
    await time.advance(1_000);
    expect(await firer.fire(start + 2_000)).toEqual({ outcome: 'skipped', reason: 'overlap' });
    expect(probe.calls).toHaveLength(2);
    probe.finishAll();
    expect(await first).toEqual({ outcome: 'success', attempts: 1 });
    expect(await second).toEqual({ outcome: 'success', attempts: 1 });
  });

  it('with concurrency 2, two occurrences run at once through the ledger, each under its own lease', async () => {
    const { time, store, probe, job } = setup(
      (probe) => resolvedJob({ run: probe.run, concurrency: 2, overlap: 'skip' }),
      'hold',
    );
    const a = await instance(store, job, { name: 'a' });
    const b = await instance(store, job, { name: 'b' });
    const first = a.firer.fire(start);
    await time.advance(1_000);
    const second = b.firer.fire(start + 1_000);
    await time.advance(1_000);
    expect(await a.firer.fire(start + 2_000)).toEqual({ outcome: 'skipped', reason: 'overlap' });
    expect(probe.calls.map((call) => call.ctx.token)).toEqual([1, 2]);
    probe.finishAll();
    expect(await first).toMatchObject({ outcome: 'success', token: 1 });
    expect(await second).toMatchObject({ outcome: 'success', token: 2 });
  });

  it('a manual run (resil jobs run) runs at once, whatever the ledger holds, and is recorded in history', async () => {
    const { store, probe, job } = setup((probe) => resolvedJob({ run: probe.run }));
    store.skewMs = -2_000;
    const { firer } = await instance(store, job);
    const done = await firer.fire(start - 5_000, { kind: 'manual' });
    expect(done).toMatchObject({ outcome: 'success', token: 1 });
    expect(await firer.fire(start - 5_000, { kind: 'manual' })).toMatchObject({
      outcome: 'success',
      token: 2,
    });
    expect(probe.calls).toHaveLength(2);
    expect((await store.runHistory('report'))[0]).toMatchObject({ outcome: 'success', token: 2 });
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
