import {
  delay,
  isLockLostError,
  type LockEventArguments,
  LockLostError,
  type LockStrategyOptions,
  ResiliencePipelineBuilder,
  type TelemetryEvent,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { deferred, RecordingStore, untilAborted } from './recording-store.ts';

function setUp(options: Partial<LockStrategyOptions> = {}) {
  const time = new FakeTimeProvider();
  const store = new RecordingStore(time);
  const events: TelemetryEvent[] = [];
  const lost: LockEventArguments[] = [];
  const pipeline = new ResiliencePipelineBuilder({
    timeProvider: time,
    telemetry: (event) => events.push(event),
  })
    .addLock({ key: () => 'report', store, onLockLost: (args) => void lost.push(args), ...options })
    .build();
  return { time, store, events, lost, pipeline };
}

const eventNames = (events: TelemetryEvent[]) => events.map((event) => event.event);

/** Settles a callback that runs until its signal aborts; `abortedAt()` is when it aborted (monotonic ms). */
function settleUntilAborted({ pipeline, time }: ReturnType<typeof setUp>) {
  let abortedAt: number | undefined;
  const result = pipeline.settle(async ({ signal }) => {
    signal.addEventListener('abort', () => {
      abortedAt = time.monotonic();
    });
    await untilAborted(signal);
  });
  return { result, abortedAt: () => abortedAt };
}

describe('lock: renew', () => {
  it('renews every ttl / 3 to now + ttl while the callback runs', async () => {
    const { pipeline, store, time, lost } = setUp();
    const done = deferred();
    const expiries: number[] = [];
    const result = pipeline.execute(async () => {
      await done.promise;
      return 'finished';
    });
    for (let step = 0; step < 4; step++) {
      await time.advance(10_000);
      expiries.push((await store.inspect('report'))!.expiresAt.getTime() - time.now());
    }
    expect(store.times('renew')).toEqual([10_000, 20_000, 30_000, 40_000]);
    expect(expiries).toEqual([30_000, 30_000, 30_000, 30_000]);
    await time.advance(5_000);
    done.resolve();
    expect(await result).toBe('finished');
    expect(lost).toEqual([]);
    expect(time.pendingTimers).toBe(0);
  });

  it('follows the ttl: every second for a 3 s ttl', async () => {
    const { pipeline, store, time } = setUp({ ttl: '3s' });
    const done = deferred();
    const result = pipeline.execute(() => done.promise);
    await time.advance(4_500);
    expect(store.times('renew')).toEqual([1_000, 2_000, 3_000, 4_000]);
    done.resolve();
    await result;
  });

  it('retries a renewal that hit a store error while the lease is still valid, and keeps the lease', async () => {
    const { pipeline, store, time, lost, events } = setUp();
    let failures = 2;
    store.onRenew = (key, owner, ttl) =>
      failures-- > 0 ? Promise.reject(new Error('ECONNRESET')) : store.realRenew(key, owner, ttl);
    const done = deferred();
    const result = pipeline.execute(() => done.promise);
    await time.advance(25_000);
    // 10 000 fails, retried after 50 ms (fails), then 100 ms (succeeds); the cadence restarts from there.
    expect(store.times('renew')).toEqual([10_000, 10_050, 10_150, 20_150]);
    expect(eventNames(events)).toEqual(['OnLockRenewFailed', 'OnLockRenewFailed']);
    expect(events[0]!.args).toMatchObject({ key: 'report', error: new Error('ECONNRESET') });
    expect(lost).toEqual([]);
    done.resolve();
    await result;
    expect(time.pendingTimers).toBe(0);
  });
});

describe('lock: lose', () => {
  it('aborts the signal with LockLostError when the store refuses a renewal; a failing callback reports it', async () => {
    const { pipeline, store, time, lost, events } = setUp();
    store.onRenew = async () => false;
    let signalReason: unknown;
    let abortedAt: number | undefined;
    const result = pipeline.settle(
      async ({ signal }) => {
        signal.addEventListener('abort', () => {
          abortedAt = time.monotonic();
          signalReason = signal.reason;
        });
        await untilAborted(signal);
      },
      { operationKey: 'nightly' },
    );
    await time.advance(10_000);
    const outcome = await result;
    expect(abortedAt).toBe(10_000);
    expect(outcome.error).toBeInstanceOf(LockLostError);
    expect(outcome.error).toBe(signalReason);
    const error = outcome.error as LockLostError;
    expect(error.code).toBe('LOCK_LOST');
    expect(error.key).toBe('report');
    expect(error.isRejection()).toBe(false);
    expect(isLockLostError(error)).toBe(true);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.key).toBe('report');
    expect(lost[0]!.context.operationKey).toBe('nightly');
    expect(eventNames(events)).toEqual(['OnLockLost']);
    expect(events[0]!.args).toEqual(lost[0]);
    // The lease is someone else's now: no release.
    expect(store.calls.map((call) => call.op)).toEqual(['acquire', 'renew']);
    expect(time.pendingTimers).toBe(0);
  });

  it('loses the lease when store errors last until the local estimate expires, not a moment before', async () => {
    const setup = setUp();
    const { store, time, lost } = setup;
    store.onRenew = () => Promise.reject(new Error('ETIMEDOUT'));
    const run = settleUntilAborted(setup);
    await time.advance(29_999);
    expect(run.abortedAt()).toBeUndefined();
    expect(store.times('renew')).toEqual([
      10_000, 10_050, 10_150, 10_350, 10_750, 11_550, 12_550, 13_550, 14_550, 15_550, 16_550, 17_550, 18_550,
      19_550, 20_550, 21_550, 22_550, 23_550, 24_550, 25_550, 26_550, 27_550, 28_550, 29_550,
    ]);
    await time.advance(1);
    expect(run.abortedAt()).toBe(30_000);
    expect((await run.result).error).toBeInstanceOf(LockLostError);
    expect(lost).toHaveLength(1);
    expect(time.pendingTimers).toBe(0);
  });

  it('counts the estimate from before the acquire request was sent', async () => {
    const setup = setUp();
    const { store, time } = setup;
    // The acquire takes 5 s to answer; the store's lease may have started any time in between.
    store.onAcquire = async (key, owner, ttl) => {
      await delay(time, 5_000);
      return store.realAcquire(key, owner, ttl);
    };
    store.onRenew = () => Promise.reject(new Error('ETIMEDOUT'));
    const run = settleUntilAborted(setup);
    await time.advance(40_000);
    expect(store.times('renew')[0]).toBe(10_000);
    expect(run.abortedAt()).toBe(30_000);
    expect((await run.result).error).toBeInstanceOf(LockLostError);
  });

  it('loses the lease when a renewal request hangs past the estimate', async () => {
    const { pipeline, store, time, lost } = setUp();
    store.onRenew = () => new Promise(() => {});
    const result = pipeline.settle(({ signal }) => untilAborted(signal));
    await time.advance(29_999);
    expect(lost).toHaveLength(0);
    await time.advance(1);
    expect(lost).toHaveLength(1);
    expect((await result).error).toBeInstanceOf(LockLostError);
    expect(store.times('renew')).toEqual([10_000]);
    // The lease may still be ours in the store: release it.
    expect(store.calls.at(-1)!.op).toBe('release');
    expect(time.pendingTimers).toBe(0);
  });

  it('measures the estimate from the last successful renewal request', async () => {
    const setup = setUp();
    const { store, time } = setup;
    let renewals = 0;
    store.onRenew = (key, owner, ttl) =>
      renewals++ === 0 ? store.realRenew(key, owner, ttl) : Promise.reject(new Error('down'));
    const run = settleUntilAborted(setup);
    await time.advance(60_000);
    expect(run.abortedAt()).toBe(40_000);
    await run.result;
  });

  it('returns the success of a callback that ignores its signal after the loss', async () => {
    const { pipeline, store, time, lost } = setUp();
    store.onRenew = async () => false;
    const result = pipeline.settle(async () => {
      await delay(time, 15_000);
      return 'written anyway';
    });
    await time.advance(15_000);
    expect(lost).toHaveLength(1);
    expect(await result).toMatchObject({ ok: true, value: 'written anyway' });
  });

  it('reports LockLostError, with the callback error as cause, when the callback fails another way after the loss', async () => {
    const { pipeline, store, time } = setUp();
    store.onRenew = async () => false;
    const failure = new Error('partial write');
    const result = pipeline.settle(async () => {
      await delay(time, 15_000);
      throw failure;
    });
    await time.advance(15_000);
    const error = (await result).error as LockLostError;
    expect(error).toBeInstanceOf(LockLostError);
    expect(error.key).toBe('report');
    expect(error.cause).toBe(failure);
  });

  it('waits for an async onLockLost before the execution settles, and ignores its errors', async () => {
    const time = new FakeTimeProvider();
    const store = new RecordingStore(time);
    store.onRenew = async () => false;
    const steps: string[] = [];
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addLock({
        key: () => 'report',
        store,
        onLockLost: async () => {
          steps.push('onLockLost started');
          await delay(time, 1_000);
          steps.push('onLockLost done');
          throw new Error('alerting is down');
        },
      })
      .build();
    const result = pipeline
      .settle(({ signal }) => untilAborted(signal))
      .then((outcome) => {
        steps.push('settled');
        return outcome;
      });
    await time.advance(10_000);
    expect(steps).toEqual(['onLockLost started']);
    await time.advance(1_000);
    expect(steps).toEqual(['onLockLost started', 'onLockLost done', 'settled']);
    expect((await result).error).toBeInstanceOf(LockLostError);
    expect(time.pendingTimers).toBe(0);
  });

  it('does not report a loss after the callback has ended', async () => {
    const { pipeline, store, time, lost } = setUp();
    const renewing = deferred<boolean>();
    store.onRenew = () => renewing.promise;
    const done = deferred();
    const result = pipeline.settle(() => done.promise);
    await time.advance(10_000);
    done.resolve();
    await result;
    renewing.resolve(false);
    await time.advance(60_000);
    expect(lost).toEqual([]);
    expect(time.pendingTimers).toBe(0);
  });
});
