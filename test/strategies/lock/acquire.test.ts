import {
  delay,
  isLockNotAcquiredError,
  isRejection,
  LockNotAcquiredError,
  type LockStrategyOptions,
  ResiliencePipelineBuilder,
  StoreUnavailableError,
  type TelemetryEvent,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { deferred, RecordingStore } from './recording-store.ts';

function setUp(options: Partial<LockStrategyOptions> = {}) {
  const time = new FakeTimeProvider();
  const store = new RecordingStore(time);
  const events: TelemetryEvent[] = [];
  const build = (extra: Partial<LockStrategyOptions> = {}) =>
    new ResiliencePipelineBuilder({ timeProvider: time, telemetry: (event) => events.push(event) })
      .addLock({ key: () => 'report', store, ...options, ...extra })
      .build();
  return { time, store, events, pipeline: build(), build };
}

/** Holds the lock on 'report' until the returned function is called. */
async function holdLock(setup: ReturnType<typeof setUp>) {
  const held = deferred();
  const holder = setup.build({ wait: 0 }).execute(() => held.promise);
  await setup.time.advance(0);
  return async () => {
    held.resolve();
    await holder;
  };
}

describe('lock: acquire', () => {
  it('runs the callback under a lease on key(context) and releases it afterwards', async () => {
    const { pipeline, store, time } = setUp();
    const value = await pipeline.execute(async () => {
      expect(await store.inspect('report')).toMatchObject({ token: 1 });
      return 42;
    });
    expect(value).toBe(42);
    expect(await store.inspect('report')).toBeUndefined();
    expect(store.calls.map((call) => call.op)).toEqual(['acquire', 'release']);
    expect(time.pendingTimers).toBe(0);
  });

  it('passes the execution context to key()', async () => {
    const time = new FakeTimeProvider();
    const store = new RecordingStore(time);
    const pipeline = new ResiliencePipelineBuilder({ timeProvider: time })
      .addLock({ key: (context) => `order:${context.operationKey}`, store })
      .build();
    await pipeline.execute(() => 1, { operationKey: '17' });
    expect(store.calls[0]!.key).toBe('order:17');
  });

  it('acquires under a random UUID owner id, a new one for every execution', async () => {
    const { pipeline, store } = setUp();
    await pipeline.execute(() => 1);
    await pipeline.execute(() => 2);
    const owners = store.calls.filter((call) => call.op === 'acquire').map((call) => call.owner);
    expect(owners[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(owners[1]).not.toBe(owners[0]);
  });

  it('fails fast by default when the lock is held: LockNotAcquiredError, a rejection, callback never ran', async () => {
    const setup = setUp();
    const release = await holdLock(setup);
    let ran = false;
    const outcome = await setup.pipeline.settle(() => {
      ran = true;
    });
    expect(ran).toBe(false);
    expect(outcome.error).toBeInstanceOf(LockNotAcquiredError);
    const error = outcome.error as LockNotAcquiredError;
    expect(error.code).toBe('LOCK_NOT_ACQUIRED');
    expect(error.key).toBe('report');
    expect(error.isRejection()).toBe(true);
    expect(isRejection(error)).toBe(true);
    expect(isLockNotAcquiredError(error)).toBe(true);
    expect(setup.store.times('acquire')).toEqual([0, 0]);
    await release();
    expect(setup.time.pendingTimers).toBe(0);
  });

  it('reports OnLockRejected with { context, key } when wait runs out', async () => {
    const setup = setUp();
    const release = await holdLock(setup);
    setup.events.length = 0;
    await setup.pipeline.settle(() => 1, { operationKey: 'op-1' });
    expect(setup.events).toHaveLength(1);
    const [event] = setup.events;
    expect(event).toMatchObject({ event: 'OnLockRejected', strategy: 'lock' });
    expect(event!.context.operationKey).toBe('op-1');
    expect(event!.args).toEqual({ context: event!.context, key: 'report' });
    await release();
  });

  it('polls a held lock at 50, 100, 200, 400, 800 ms, then every 1 s, until wait runs out', async () => {
    const setup = setUp({ wait: '5s' });
    setup.store.wakeUps = 'lost';
    const release = await holdLock(setup);
    let settled = false;
    const result = setup.pipeline
      .settle(() => 1)
      .finally(() => {
        settled = true;
      });
    await setup.time.advance(4_999);
    expect(settled).toBe(false);
    await setup.time.advance(1);
    const outcome = await result;
    expect(outcome.error).toBeInstanceOf(LockNotAcquiredError);
    // The holder's acquire, then the waiter's first attempt and its polls; the last falls on wait's end.
    expect(setup.store.times('acquire')).toEqual([0, 0, 50, 150, 350, 750, 1550, 2550, 3550, 4550, 5000]);
    expect(setup.time.pendingTimers).toBe(1); // the holder's renewal timer, nothing of the waiter's
    expect(setup.store.activeWakeUps).toBe(0);
    await release();
    expect(setup.time.pendingTimers).toBe(0);
  });

  it('acquires at the first poll after the holder releases when the release notification is lost', async () => {
    const setup = setUp({ wait: '10s' });
    setup.store.wakeUps = 'lost';
    const release = await holdLock(setup);
    const result = setup.pipeline.settle(() => 'second');
    await setup.time.advance(400);
    await release();
    await setup.time.advance(349);
    expect(setup.store.times('acquire').at(-1)).toBe(350);
    await setup.time.advance(1);
    expect(await result).toMatchObject({ ok: true, value: 'second' });
    expect(setup.store.times('acquire').at(-1)).toBe(750);
    expect(setup.time.pendingTimers).toBe(0);
  });

  it("with a store's onRelease: also tries once the subscription is in place, then keeps the poll cadence", async () => {
    const setup = setUp({ wait: '5s' });
    const release = await holdLock(setup);
    const outcome = setup.pipeline.settle(() => 1);
    await setup.time.advance(5_000);
    expect((await outcome).error).toBeInstanceOf(LockNotAcquiredError);
    // The holder's acquire, the waiter's first attempt, its attempt once subscribed (the holder may
    // have released in between), then the polls as without notifications.
    expect(setup.store.times('acquire')).toEqual([0, 0, 0, 50, 150, 350, 750, 1550, 2550, 3550, 4550, 5000]);
    expect(setup.store.activeWakeUps).toBe(0);
    await release();
  });

  it("with a store's onRelease: acquires as soon as the holder releases, not at the next poll", async () => {
    const setup = setUp({ wait: '10s' });
    const release = await holdLock(setup);
    const result = setup.pipeline.settle(() => 'second');
    await setup.time.advance(400);
    expect(setup.store.activeWakeUps).toBe(1);
    await release();
    expect(await result).toMatchObject({ ok: true, value: 'second' });
    expect(setup.store.times('acquire').at(-1)).toBe(400);
    expect(setup.store.activeWakeUps).toBe(0);
    expect(setup.time.pendingTimers).toBe(0);
  });

  it('a waiter woken by a release that another waiter wins goes on polling at its cadence', async () => {
    const setup = setUp({ wait: '10s' });
    const release = await holdLock(setup);
    const waiters = [0, 1].map(() => setup.pipeline.settle(() => setup.time.monotonic()));
    await setup.time.advance(400);
    await release();
    // Both are woken at 400: one wins and holds the lock until released at 400 (a sync callback).
    const [first, second] = await Promise.all(waiters);
    expect([first!.value, second!.value].sort((a, b) => a! - b!)).toEqual([400, 400]);
    const attempts = setup.store.times('acquire');
    // Woken again by the winner's release at 400: no poll had to come first.
    expect(attempts.filter((at) => at === 400).length).toBeGreaterThanOrEqual(2);
    expect(setup.store.activeWakeUps).toBe(0);
    expect(setup.time.pendingTimers).toBe(0);
  });

  it("polls as before when the store's onRelease throws", async () => {
    const setup = setUp({ wait: '10s' });
    setup.store.wakeUps = 'throw';
    const release = await holdLock(setup);
    const result = setup.pipeline.settle(() => 'second');
    await setup.time.advance(400);
    await release();
    await setup.time.advance(350);
    expect(await result).toMatchObject({ ok: true, value: 'second' });
    expect(setup.store.times('acquire').at(-1)).toBe(750);
  });

  it('never subscribes without waiting: wait 0 fails fast with no onRelease call', async () => {
    const setup = setUp();
    let subscriptions = 0;
    const onRelease = setup.store.onRelease.bind(setup.store);
    setup.store.onRelease = (key, listener) => {
      subscriptions++;
      return onRelease(key, listener);
    };
    const release = await holdLock(setup);
    expect((await setup.pipeline.settle(() => 1)).error).toBeInstanceOf(LockNotAcquiredError);
    expect(subscriptions).toBe(0);
    await release();
  });

  it('fails with the abort reason at once when the caller aborts while waiting; the callback never runs', async () => {
    const setup = setUp({ wait: '1m' });
    const release = await holdLock(setup);
    const controller = new AbortController();
    let ran = false;
    let settled = false;
    const result = setup.pipeline
      .settle(
        () => {
          ran = true;
        },
        { signal: controller.signal },
      )
      .finally(() => {
        settled = true;
      });
    await setup.time.advance(120);
    const reason = new Error('shutting down');
    controller.abort(reason);
    await setup.time.advance(0);
    expect(settled).toBe(true);
    expect((await result).error).toBe(reason);
    expect(ran).toBe(false);
    expect(setup.store.activeWakeUps).toBe(0);
    await release();
    expect(setup.time.pendingTimers).toBe(0);
  });

  it('does not wait for an acquire request in flight when the caller aborts, and hands back what it won', async () => {
    const setup = setUp({ wait: '1m' });
    const release = await holdLock(setup);
    const controller = new AbortController();
    const result = setup.pipeline.settle(() => 'ran', { signal: controller.signal });
    await setup.time.advance(10);
    // The next poll's request takes 500 ms, and the holder has released by the time it lands.
    setup.store.onAcquire = async (key, owner, ttl) => {
      await delay(setup.time, 500);
      return setup.store.realAcquire(key, owner, ttl);
    };
    await setup.time.advance(50);
    await release();
    controller.abort(new Error('stop'));
    await setup.time.advance(0);
    expect((await result).error).toEqual(new Error('stop'));
    await setup.time.advance(500);
    // The late lease was released: the key is free.
    expect(await setup.store.inspect('report')).toBeUndefined();
    expect(setup.store.calls.at(-1)!.op).toBe('release');
    expect(setup.time.pendingTimers).toBe(0);
  });

  it('fails closed when the store throws on acquire: the callback does not run, the error is returned', async () => {
    const setup = setUp();
    const unavailable = new StoreUnavailableError('Redis did not answer within 2 s.');
    setup.store.onAcquire = () => Promise.reject(unavailable);
    let ran = false;
    const outcome = await setup.pipeline.settle(() => {
      ran = true;
    });
    expect(ran).toBe(false);
    expect(outcome.error).toBe(unavailable);
    expect(isRejection(outcome.error)).toBe(true);
    expect(setup.store.calls.map((call) => call.op)).toEqual(['acquire']);
    expect(setup.time.pendingTimers).toBe(0);
  });

  it('fails closed when the store throws while polling', async () => {
    const setup = setUp({ wait: '10s' });
    const release = await holdLock(setup);
    const result = setup.pipeline.settle(() => 'ran');
    await setup.time.advance(100);
    const broken = new Error('connection reset');
    setup.store.onAcquire = () => Promise.reject(broken);
    await setup.time.advance(50);
    expect((await result).error).toBe(broken);
    await release();
    expect(setup.time.pendingTimers).toBe(0);
  });

  it('takes a null answer from a custom store as "held"', async () => {
    const setup = setUp();
    setup.store.onAcquire = async () => null as never;
    expect((await setup.pipeline.settle(() => 'ran')).error).toBeInstanceOf(LockNotAcquiredError);
  });

  it('is not reentrant: a nested lock on the same key fails as held', async () => {
    const setup = setUp();
    const outcome = await setup.pipeline.settle(() => setup.pipeline.execute(() => 'inner'));
    expect(outcome.error).toBeInstanceOf(LockNotAcquiredError);
  });

  it('types settle() outcomes with the lock errors for match()', async () => {
    const setup = setUp();
    const release = await holdLock(setup);
    const message = (await setup.pipeline.settle(() => 'ran')).match({
      ok: (value) => value,
      LOCK_NOT_ACQUIRED: (error) => `held: ${error.key}`,
      LOCK_LOST: (error) => `lost: ${error.key}`,
      STORE_UNAVAILABLE: (error) => `store: ${error.message}`,
      error: () => 'other',
    });
    expect(message).toBe('held: report');
    await release();
  });
});
