import { delay, LockLostError, ResiliencePipelineBuilder, type TelemetryEvent } from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { RecordingStore, untilAborted } from './recording-store.ts';

function setUp() {
  const time = new FakeTimeProvider();
  const store = new RecordingStore(time);
  const events: TelemetryEvent[] = [];
  const pipeline = new ResiliencePipelineBuilder({
    timeProvider: time,
    telemetry: (event) => events.push(event),
  })
    .addLock({ key: () => 'report', store })
    .build();
  return { time, store, events, pipeline };
}

describe('lock: release', () => {
  it('releases after a success', async () => {
    const { pipeline, store, time } = setUp();
    await pipeline.execute(() => 'ok');
    expect(store.calls.map((call) => call.op)).toEqual(['acquire', 'release']);
    expect(await store.inspect('report')).toBeUndefined();
    expect(time.pendingTimers).toBe(0);
  });

  it('releases after a failure, and returns the failure', async () => {
    const { pipeline, store, time } = setUp();
    const failure = new Error('report failed');
    expect((await pipeline.settle(() => Promise.reject(failure))).error).toBe(failure);
    expect(store.calls.map((call) => call.op)).toEqual(['acquire', 'release']);
    expect(await store.inspect('report')).toBeUndefined();
    expect(time.pendingTimers).toBe(0);
  });

  it('releases after a synchronous throw', async () => {
    const { pipeline, store } = setUp();
    const outcome = await pipeline.settle(() => {
      throw new TypeError('bad input');
    });
    expect(outcome.error).toBeInstanceOf(TypeError);
    expect(await store.inspect('report')).toBeUndefined();
  });

  it("releases after the caller's abort, and returns the abort reason", async () => {
    const { pipeline, store, time } = setUp();
    const controller = new AbortController();
    const result = pipeline.settle(({ signal }) => untilAborted(signal), { signal: controller.signal });
    await time.advance(12_000);
    const reason = new Error('shutdown');
    controller.abort(reason);
    expect((await result).error).toBe(reason);
    expect(store.calls.map((call) => call.op)).toEqual(['acquire', 'renew', 'release']);
    expect(await store.inspect('report')).toBeUndefined();
    expect(time.pendingTimers).toBe(0);
  });

  it("does not delete the lease of the owner that took over after this one's expired", async () => {
    const { pipeline, store, time } = setUp();
    store.onRenew = () => Promise.reject(new Error('store unreachable for renewals'));
    // The first holder ignores its signal and runs for 40 s; its lease expires in the store at 30 s.
    const first = pipeline.settle(async () => {
      await delay(time, 40_000);
      return 'first';
    });
    await time.advance(31_000);
    store.onRenew = undefined;
    let secondOwner: string | undefined;
    const second = pipeline.settle(async () => {
      secondOwner = (await store.inspect('report'))!.owner;
      await delay(time, 20_000);
      return 'second';
    });
    await time.advance(10_000);
    expect(await first).toMatchObject({ ok: true, value: 'first' });
    expect((await store.inspect('report'))?.owner).toBe(secondOwner);
    await time.advance(10_000);
    expect(await second).toMatchObject({ ok: true, value: 'second' });
    expect(time.pendingTimers).toBe(0);
  });

  it('releases after a loss by expiry (the lease may still be ours), not after a refused renewal', async () => {
    const expired = setUp();
    expired.store.onRenew = () => Promise.reject(new Error('down'));
    const a = expired.pipeline.settle(({ signal }) => untilAborted(signal));
    await expired.time.advance(30_000);
    expect((await a).error).toBeInstanceOf(LockLostError);
    expect(expired.store.calls.at(-1)!.op).toBe('release');

    const refused = setUp();
    refused.store.onRenew = async () => false;
    const b = refused.pipeline.settle(({ signal }) => untilAborted(signal));
    await refused.time.advance(10_000);
    expect((await b).error).toBeInstanceOf(LockLostError);
    expect(refused.store.calls.some((call) => call.op === 'release')).toBe(false);
  });

  it('ignores a failed release and reports it as OnLockReleaseFailed', async () => {
    const { pipeline, store, time, events } = setUp();
    const failure = new Error('connection closed');
    store.onReleaseCall = () => Promise.reject(failure);
    expect(await pipeline.execute(() => 'done')).toBe('done');
    expect(events.map((event) => event.event)).toEqual(['OnLockReleaseFailed']);
    expect(events[0]!.args).toMatchObject({ key: 'report', error: failure });
    expect(time.pendingTimers).toBe(0);
  });
});
