import {
  InvalidOptionError,
  MemoryLockStore,
  type RateLimiterRejectedError,
  type RateLimiterStrategyOptions,
  type RateLimitPermits,
  ResiliencePipelineBuilder,
  SharedRateLimiter,
  type SharedRateLimitStore,
  sharedRateLimiterDefaults,
  type TelemetryEvent,
  TokenBucketRateLimiter,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { describeSharedRateLimitConformance } from '../support/shared-rate-limit-conformance.ts';

function limited(time: FakeTimeProvider, options: RateLimiterStrategyOptions, events: TelemetryEvent[] = []) {
  return new ResiliencePipelineBuilder({ timeProvider: time, telemetry: (event) => events.push(event) })
    .addRateLimiter(options)
    .build();
}

/** Settles `count` executions one after the other: 'ok', or the rejection's retryAfter. */
async function burst(pipeline: ReturnType<typeof limited>, count: number) {
  const results: Array<'ok' | number | undefined> = [];
  for (let i = 0; i < count; i++) {
    const outcome = await pipeline.settle(() => 'ran');
    results.push(outcome.ok ? 'ok' : (outcome.error as RateLimiterRejectedError).retryAfter);
  }
  return results;
}

/** A store of your own: its permits come from `take`, which counts its calls. */
function customStore(take: RateLimitPermits['take']) {
  const store = {
    calls: 0,
    sharedRateLimiter: (options, environment) =>
      new SharedRateLimiter(options, environment, {
        take: (key, policy) => {
          store.calls++;
          return take(key, policy);
        },
      }),
  } satisfies SharedRateLimitStore & { calls: number };
  return store;
}

describe('shared rate limiter (MemoryLockStore, fake time)', () => {
  it('pins the defaults', () => {
    expect(sharedRateLimiterDefaults).toEqual({ storeTimeout: 500, localInterval: 1_000 });
  });

  it.each([
    [{ tokenLimit: 10 }, { burst: 10, intervalMs: 100 }],
    [
      { tokenLimit: 10, tokensPerPeriod: 4, replenishmentPeriod: '2s' },
      { burst: 10, intervalMs: 500 },
    ],
    [{ permitLimit: 100 }, { burst: 100, intervalMs: 10 }],
    [
      { permitLimit: 6, window: '1m' },
      { burst: 6, intervalMs: 10_000 },
    ],
  ])('maps %o onto the GCRA policy %o', (options, policy) => {
    const time = new FakeTimeProvider();
    const environment = { timeProvider: time, report: () => {} };
    const limiter = new MemoryLockStore({ timeProvider: time }).sharedRateLimiter(
      { ...options, key: 'k' } as RateLimiterStrategyOptions,
      environment,
    );
    expect((limiter as SharedRateLimiter).policy).toEqual(policy);
  });

  it('token bucket: a burst of tokenLimit, then a token every replenishmentPeriod / tokensPerPeriod', async () => {
    const time = new FakeTimeProvider();
    const store = new MemoryLockStore({ timeProvider: time });
    const pipeline = limited(time, {
      tokenLimit: 3,
      tokensPerPeriod: 1,
      replenishmentPeriod: '1s',
      store,
      key: 'k',
    });
    expect(await burst(pipeline, 4)).toEqual(['ok', 'ok', 'ok', 1_000]);
    await time.advance(400);
    expect(await burst(pipeline, 1)).toEqual([600]);
    await time.advance(600);
    expect(await burst(pipeline, 2)).toEqual(['ok', 1_000]);
    // A long idle time fills the bucket to tokenLimit, no more.
    await time.advance(60_000);
    expect(await burst(pipeline, 4)).toEqual(['ok', 'ok', 'ok', 1_000]);
    expect(time.pendingTimers).toBe(0);
  });

  it('token bucket: tokensPerPeriod 5 per second is a token every 200 ms', async () => {
    const time = new FakeTimeProvider();
    const store = new MemoryLockStore({ timeProvider: time });
    const pipeline = limited(time, { tokenLimit: 2, tokensPerPeriod: 5, store, key: 'k' });
    expect(await burst(pipeline, 3)).toEqual(['ok', 'ok', 200]);
    await time.advance(200);
    expect(await burst(pipeline, 2)).toEqual(['ok', 200]);
  });

  it('sliding window: permitLimit at once, then one every window / permitLimit', async () => {
    const time = new FakeTimeProvider();
    const store = new MemoryLockStore({ timeProvider: time });
    const pipeline = limited(time, { permitLimit: 4, window: '1s', store, key: 'k' });
    expect(await burst(pipeline, 5)).toEqual(['ok', 'ok', 'ok', 'ok', 250]);
    await time.advance(100);
    expect(await burst(pipeline, 1)).toEqual([150]);
    await time.advance(150);
    expect(await burst(pipeline, 2)).toEqual(['ok', 250]);
  });

  it('keeps exact arithmetic for intervals that are not whole milliseconds (1 s / 3)', async () => {
    const time = new FakeTimeProvider();
    const store = new MemoryLockStore({ timeProvider: time });
    const pipeline = limited(time, { permitLimit: 3, window: '1s', store, key: 'k' });
    expect((await burst(pipeline, 4)).slice(0, 3)).toEqual(['ok', 'ok', 'ok']);
    await time.advance(1_000);
    expect((await burst(pipeline, 4)).slice(0, 3)).toEqual(['ok', 'ok', 'ok']);
  });

  it('shares one budget between pipelines on the same store and key, not across keys or stores', async () => {
    const time = new FakeTimeProvider();
    const store = new MemoryLockStore({ timeProvider: time });
    const options = { tokenLimit: 2, replenishmentPeriod: '1h', store } as const;
    const first = limited(time, { ...options, key: 'a' });
    const second = limited(time, { ...options, key: 'a' });
    expect(await burst(first, 1)).toEqual(['ok']);
    expect(await burst(second, 2)).toEqual(['ok', 1_800_000]);
    expect(await burst(limited(time, { ...options, key: 'b' }), 2)).toEqual(['ok', 'ok']);
    const otherStore = new MemoryLockStore({ timeProvider: time });
    expect(await burst(limited(time, { ...options, store: otherStore, key: 'a' }), 2)).toEqual(['ok', 'ok']);
  });

  it('calls onRejected and reports OnRateLimiterRejected with the store’s retryAfter', async () => {
    const time = new FakeTimeProvider();
    const store = new MemoryLockStore({ timeProvider: time });
    const seen: Array<number | undefined> = [];
    const events: TelemetryEvent[] = [];
    const pipeline = limited(
      time,
      { tokenLimit: 1, store, key: 'k', onRejected: ({ retryAfter }) => void seen.push(retryAfter) },
      events,
    );
    await burst(pipeline, 2);
    expect(seen).toEqual([1_000]);
    expect(events.map((event) => event.event)).toEqual(['OnRateLimiterRejected']);
  });

  it.each([
    [{ tokenLimit: 1 }, 'rateLimiter.key'],
    [{ tokenLimit: 1, key: '' }, 'rateLimiter.key'],
    [{ tokenLimit: 1, key: 'k', queueLimit: 1 }, 'rateLimiter.queueLimit'],
    [{ permitLimit: 1, key: 'k', segmentsPerWindow: 10 }, 'rateLimiter.segmentsPerWindow'],
    [{ limiter: new TokenBucketRateLimiter({ tokenLimit: 1 }), key: 'k' }, 'rateLimiter.limiter'],
    [{ tokenLimit: 0, key: 'k' }, 'rateLimiter.tokenLimit'],
    [{ permitLimit: 1, window: 0, key: 'k' }, 'rateLimiter.window'],
    [{ tokenLimit: 1, key: 'k', storeTimeout: 0 }, 'rateLimiter.storeTimeout'],
  ])('refuses %o with store at build(), naming %s', (options, option) => {
    const time = new FakeTimeProvider();
    const store = new MemoryLockStore({ timeProvider: time });
    const build = () => limited(time, { ...options, store } as unknown as RateLimiterStrategyOptions);
    expect(build).toThrow(InvalidOptionError);
    expect(build).toThrow(expect.objectContaining({ option }));
  });

  it('accepts queueLimit 0 with store, and refuses a store that cannot share rate limits', () => {
    const time = new FakeTimeProvider();
    const store = new MemoryLockStore({ timeProvider: time });
    expect(() => limited(time, { tokenLimit: 1, queueLimit: 0, store, key: 'k' })).not.toThrow();
    const lockOnly = { acquire: async () => 1, renew: async () => true, release: async () => {} };
    const build = () =>
      limited(time, { tokenLimit: 1, store: lockOnly, key: 'k' } as unknown as RateLimiterStrategyOptions);
    expect(build).toThrow(expect.objectContaining({ code: 'INVALID_OPTION', option: 'rateLimiter.store' }));
  });
});

describe('shared rate limiter when the store fails (fail-open)', () => {
  it('decides a failed call locally, reports it once, and asks the store again after 1 s', async () => {
    const time = new FakeTimeProvider();
    const failure = new Error('connection refused');
    let failing = true;
    const store = customStore(() => (failing ? Promise.reject(failure) : Promise.resolve(0)));
    const events: TelemetryEvent[] = [];
    const pipeline = limited(time, { tokenLimit: 2, replenishmentPeriod: '1h', store, key: 'k' }, events);
    // The local bucket (2 tokens, this process) decides while the store is out.
    expect(await burst(pipeline, 3)).toEqual(['ok', 'ok', 3_600_000]);
    expect(store.calls).toBe(1);
    const unavailable = events.filter((event) => event.event === 'OnRateLimiterStoreUnavailable');
    expect(unavailable).toHaveLength(1);
    expect(unavailable[0]).toMatchObject({
      strategy: 'rate-limiter',
      args: { key: 'k', error: failure, localFor: 1_000 },
    });
    await time.advance(999);
    await burst(pipeline, 1);
    expect(store.calls).toBe(1);
    failing = false;
    await time.advance(1);
    expect(await burst(pipeline, 3)).toEqual(['ok', 'ok', 'ok']);
    expect(store.calls).toBe(4);
  });

  it('bounds a store that does not answer by storeTimeout, then decides locally', async () => {
    const time = new FakeTimeProvider();
    const store = customStore(() => new Promise<number>(() => {}));
    const events: TelemetryEvent[] = [];
    const pipeline = limited(time, { tokenLimit: 1, store, key: 'k', storeTimeout: '300ms' }, events);
    let settled = false;
    const outcome = pipeline
      .settle(() => 'ran')
      .then((result) => {
        settled = true;
        return result;
      });
    await time.advance(299);
    expect(settled).toBe(false);
    await time.advance(1);
    expect((await outcome).ok).toBe(true);
    expect((events[0]!.args as { error: Error }).error).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: 'The rate limit store did not decide "k" within 300 ms.',
    });
    expect(time.pendingTimers).toBe(0);
  });

  it('fails open on a store whose take throws synchronously', async () => {
    const time = new FakeTimeProvider();
    const store = customStore(() => {
      throw new Error('bug');
    });
    // The local sliding window: its permit comes back when its segment leaves the window.
    const pipeline = limited(time, { permitLimit: 1, store, key: 'k' });
    expect(await burst(pipeline, 2)).toEqual(['ok', 1_000]);
  });
});

// The same cases as the Redis and PostgreSQL stores, on the system clock.
const memoryStores = new Map<string, MemoryLockStore>();
describeSharedRateLimitConformance('MemoryLockStore', {
  store: (namespace) => {
    let store = memoryStores.get(namespace);
    if (store === undefined) {
      store = new MemoryLockStore();
      memoryStores.set(namespace, store);
    }
    return store;
  },
});
