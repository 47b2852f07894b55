import type { LockStore } from '../strategies/lock/store.ts';
import {
  type ConformanceFactory,
  type ConformanceTestFunctions,
  skipTest,
  sleep,
  testFunctionsOf,
  uniqueNamespace,
} from './conformance-namespace.ts';

export interface LockStoreConformanceOptions {
  /**
   * The short ttl of the expiry tests, in ms. Expiry is judged by the store's own clock, so these
   * tests wait in real time. Defaults to 300; raise it for a store far away on the network.
   */
  expiryTtlMs?: number;
  /** Acquirers racing for one key in the atomicity test. Defaults to 50. */
  concurrentAcquirers?: number;
  /** Your test framework's `describe`, `it` and `expect`. Defaults to its globals. */
  test?: ConformanceTestFunctions;
}

const longTtl = 30_000;
/** Slack for stores whose clock has millisecond (or coarser) resolution. */
const clockResolution = 5;

const monotonicNow = () => performance.now();

/**
 * Registers a test suite (vitest, jest or node:test) that checks `factory`'s store against the {@link LockStore} contract:
 * atomic acquire under concurrency, owner checks on renew and release, expiry by the store's clock,
 * fencing tokens that only increase per key (across release and expiry), and, when the store has
 * them, `inspect()`, `now()` and the `onRelease()` wake-ups. Call it at the top level of a test file, with your test framework's
 * `describe`, `it` and `expect` in `options.test` (vitest, jest, or node:test with the `expect`
 * package; or its globals).
 *
 * `factory` is called once per test with a fresh namespace; use it as the key prefix. Close
 * connections in your own `afterAll`.
 *
 * @example
 * // test/my-store.test.ts
 * import { afterAll, describe, expect, it } from 'vitest';
 * import { describeLockStoreConformance } from 'resil/testing';
 * const redis = new Redis();
 * afterAll(() => redis.quit());
 * describeLockStoreConformance('RedisLockStore', (prefix) => new RedisLockStore(redis, { prefix }), {
 *   test: { describe, it, expect },
 * });
 */
export function describeLockStoreConformance(
  name: string,
  factory: ConformanceFactory<LockStore>,
  options: LockStoreConformanceOptions = {},
): void {
  const { describe, it, expect } = testFunctionsOf(options.test, 'describeLockStoreConformance');
  const ttl = options.expiryTtlMs ?? 300;
  const acquirers = options.concurrentAcquirers ?? 50;
  const timeout = Math.max(10_000, ttl * 20);

  /** A fresh store and a key of its own. */
  async function setUp(): Promise<{ store: LockStore; key: (name?: string) => string }> {
    const namespace = uniqueNamespace();
    const store = await factory(namespace);
    return { store, key: (suffix = 'lock') => `${namespace}${suffix}` };
  }

  /** Polls `acquire` until it succeeds; fails the test past `bound` ms. */
  async function acquireEventually(store: LockStore, key: string, owner: string, bound = ttl + 3_000) {
    const startedAt = monotonicNow();
    for (;;) {
      const token = await store.acquire(key, owner, longTtl);
      if (token !== undefined) return token;
      if (monotonicNow() - startedAt > bound) {
        throw new Error(`"${key}" was still held ${bound} ms later: the lease did not expire.`);
      }
      await sleep(10);
    }
  }

  /**
   * Runs a real-time scenario up to 3 times: it returns false when the machine was too slow for
   * its timing assumptions (a sleep overshot), which says nothing about the store.
   */
  async function timed(scenario: () => Promise<boolean>): Promise<void> {
    for (let attempt = 1; attempt <= 3; attempt++) {
      if (await scenario()) return;
    }
    throw new Error('The machine was too slow for this timing test three times in a row.');
  }

  /**
   * Subscribes to `onRelease` and counts calls. `nextCall` resolves at the next call not yet
   * awaited (one that already came counts), and fails the test after 5 s naming `what`.
   */
  function listen(store: LockStore, key: string) {
    let calls = 0;
    let awaited = 0;
    let wake: (() => void) | undefined;
    const unsubscribe = store.onRelease!(key, () => {
      calls++;
      wake?.();
    });
    return {
      get calls() {
        return calls - 1;
      },
      unsubscribe,
      async nextCall(what: string): Promise<void> {
        const target = ++awaited;
        const startedAt = monotonicNow();
        while (calls < target) {
          const left = 5_000 - (monotonicNow() - startedAt);
          if (left <= 0) throw new Error(`onRelease("${key}"): no ${what} within 5 s.`);
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, left);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        }
        wake = undefined;
      },
    };
  }

  describe(`LockStore conformance: ${name}`, () => {
    describe('acquire', () => {
      it('returns a positive integer fencing token for a free key', async () => {
        const { store, key } = await setUp();
        const token = await store.acquire(key(), 'owner-a', longTtl);
        expect(Number.isSafeInteger(token)).toBe(true);
        expect(token).toBeGreaterThan(0);
      });

      it('returns undefined while the lease is live, for another owner and for the holder itself', async () => {
        const { store, key } = await setUp();
        await store.acquire(key(), 'owner-a', longTtl);
        expect(await store.acquire(key(), 'owner-b', longTtl)).toBeUndefined();
        expect(await store.acquire(key(), 'owner-a', longTtl)).toBeUndefined();
      });

      it(`is atomic: exactly one of ${acquirers} concurrent acquirers wins`, async () => {
        const { store, key } = await setUp();
        const results = await Promise.all(
          Array.from({ length: acquirers }, (_, index) => store.acquire(key(), `owner-${index}`, longTtl)),
        );
        const winners = results.filter((token) => token !== undefined);
        expect(winners).toHaveLength(1);
        if (store.inspect) {
          const lease = await store.inspect(key());
          expect(lease?.owner).toBe(`owner-${results.findIndex((token) => token !== undefined)}`);
          expect(lease?.token).toBe(winners[0]);
        }
      });

      it('keeps keys apart: concurrent acquirers on 10 keys get exactly one winner per key', async () => {
        const { store, key } = await setUp();
        const keys = Array.from({ length: 10 }, (_, index) => key(`lock-${index}`));
        const results = await Promise.all(
          keys.flatMap((lockKey) =>
            Array.from({ length: 5 }, (_, index) =>
              store.acquire(lockKey, `owner-${index}`, longTtl).then((token) => ({ lockKey, token })),
            ),
          ),
        );
        for (const lockKey of keys) {
          const won = results.filter((result) => result.lockKey === lockKey && result.token !== undefined);
          expect(won, lockKey).toHaveLength(1);
        }
      });

      it('answers each of many acquires and releases issued at once on its own, held keys and free ones mixed', async () => {
        const { store, key } = await setUp();
        const keys = Array.from({ length: 20 }, (_, index) => key(`many-${index}`));
        const held = keys.filter((_, index) => index % 4 === 0);
        for (const lockKey of held) await store.acquire(lockKey, 'holder', longTtl);
        const tokens = await Promise.all(keys.map((lockKey) => store.acquire(lockKey, 'owner-a', longTtl)));
        for (const [index, lockKey] of keys.entries()) {
          if (held.includes(lockKey)) expect(tokens[index], lockKey).toBeUndefined();
          else expect(Number.isSafeInteger(tokens[index]) && tokens[index]! > 0, lockKey).toBe(true);
        }
        // Everyone releases everything at once: only the owner's own leases go.
        await Promise.all(keys.map((lockKey) => store.release(lockKey, 'owner-a')));
        const retaken = await Promise.all(keys.map((lockKey) => store.acquire(lockKey, 'owner-b', longTtl)));
        for (const [index, lockKey] of keys.entries()) {
          if (held.includes(lockKey)) expect(retaken[index], lockKey).toBeUndefined();
          else expect(retaken[index], lockKey).toBeGreaterThan(tokens[index]!);
        }
      });
    });

    describe('renew', () => {
      it('succeeds for the holder only, and never transfers the lease', async () => {
        const { store, key } = await setUp();
        const token = await store.acquire(key(), 'owner-a', longTtl);
        expect(await store.renew(key(), 'owner-b', longTtl)).toBe(false);
        expect(await store.renew(key(), 'owner-a', longTtl)).toBe(true);
        expect(await store.acquire(key(), 'owner-b', longTtl)).toBeUndefined();
        if (store.inspect) expect(await store.inspect(key())).toMatchObject({ owner: 'owner-a', token });
      });

      it('returns false for a free key and after release, without creating a lease', async () => {
        const { store, key } = await setUp();
        expect(await store.renew(key(), 'owner-a', longTtl)).toBe(false);
        await store.acquire(key(), 'owner-a', longTtl);
        await store.release(key(), 'owner-a');
        expect(await store.renew(key(), 'owner-a', longTtl)).toBe(false);
        expect(await store.acquire(key(), 'owner-b', longTtl)).toBeDefined();
      });

      it(
        'pushes the expiry to now + ttl',
        async () => {
          await timed(async () => {
            const { store, key } = await setUp();
            await store.acquire(key(), 'owner-a', ttl);
            const acquiredAt = monotonicNow();
            await sleep(ttl * 0.6);
            const renewRequestedAt = monotonicNow();
            expect(await store.renew(key(), 'owner-a', ttl)).toBe(true);
            // Past the first lease's expiry, before the renewed one's.
            await sleep(acquiredAt + ttl * 1.2 - monotonicNow());
            const taken = await store.acquire(key(), 'owner-b', ttl);
            if (monotonicNow() >= renewRequestedAt + ttl - clockResolution) return false;
            expect(taken).toBeUndefined();
            return true;
          });
        },
        timeout,
      );

      it(
        'returns false once the lease has expired, even if nobody took it',
        async () => {
          const { store, key } = await setUp();
          await store.acquire(key(), 'owner-a', ttl);
          await sleep(ttl + 50);
          expect(await store.renew(key(), 'owner-a', ttl)).toBe(false);
        },
        timeout,
      );
    });

    describe('release', () => {
      it('frees the key at once for the next owner', async () => {
        const { store, key } = await setUp();
        await store.acquire(key(), 'owner-a', longTtl);
        await store.release(key(), 'owner-a');
        expect(await store.acquire(key(), 'owner-b', longTtl)).toBeDefined();
      });

      it("does not delete another owner's lease", async () => {
        const { store, key } = await setUp();
        await store.acquire(key(), 'owner-a', longTtl);
        await store.release(key(), 'owner-b');
        expect(await store.acquire(key(), 'owner-b', longTtl)).toBeUndefined();
        expect(await store.renew(key(), 'owner-a', longTtl)).toBe(true);
      });

      it('resolves for a free key', async () => {
        const { store, key } = await setUp();
        await expect(store.release(key(), 'owner-a')).resolves.toBeUndefined();
      });

      it(
        'by an expired holder leaves the lease its successor took',
        async () => {
          const { store, key } = await setUp();
          await store.acquire(key(), 'owner-a', ttl);
          await sleep(ttl + 50);
          const token = await store.acquire(key(), 'owner-b', longTtl);
          expect(token).toBeDefined();
          await store.release(key(), 'owner-a');
          expect(await store.acquire(key(), 'owner-c', longTtl)).toBeUndefined();
          expect(await store.renew(key(), 'owner-b', longTtl)).toBe(true);
        },
        timeout,
      );
    });

    describe('expiry', () => {
      it(
        'a lease stays held until ttl has passed by the store clock, then anyone can take it',
        async () => {
          const { store, key } = await setUp();
          const requestedAt = monotonicNow();
          await store.acquire(key(), 'owner-a', ttl);
          const early = await store.acquire(key(), 'owner-b', ttl);
          if (monotonicNow() - requestedAt < ttl - clockResolution) expect(early).toBeUndefined();
          await acquireEventually(store, key(), 'owner-b');
          // The store set the expiry after the first request was sent: it cannot have expired sooner.
          expect(monotonicNow() - requestedAt).toBeGreaterThanOrEqual(ttl - clockResolution);
        },
        timeout,
      );
    });

    describe('fencing tokens', () => {
      it(
        'only increase per key: across release, expiry and owners',
        async () => {
          const { store, key } = await setUp();
          const first = (await store.acquire(key(), 'owner-a', longTtl))!;
          await store.release(key(), 'owner-a');
          const second = (await store.acquire(key(), 'owner-b', ttl))!;
          expect(second).toBeGreaterThan(first);
          const third = await acquireEventually(store, key(), 'owner-c');
          expect(third).toBeGreaterThan(second);
          await store.release(key(), 'owner-c');
          const fourth = (await store.acquire(key(), 'owner-c', longTtl))!;
          expect(fourth).toBeGreaterThan(third);
        },
        timeout,
      );

      it('are not consumed by failed acquires', async () => {
        const { store, key } = await setUp();
        const first = (await store.acquire(key(), 'owner-a', longTtl))!;
        for (let index = 0; index < 5; index++) await store.acquire(key(), `owner-${index}`, longTtl);
        await store.release(key(), 'owner-a');
        const second = (await store.acquire(key(), 'owner-b', longTtl))!;
        expect(second).toBeGreaterThan(first);
        if (store.inspect) expect((await store.inspect(key()))?.token).toBe(second);
      });
    });

    describe('inspect', () => {
      it('reports the live lease: owner, token and expiry by the store clock', async (context) => {
        const { store, key } = await setUp();
        if (!store.inspect) return skipTest(context, 'the store has no inspect()');
        const before = store.now ? await store.now() : Date.now();
        const token = await store.acquire(key(), 'owner-a', longTtl);
        const after = store.now ? await store.now() : Date.now();
        const lease = await store.inspect(key());
        expect(lease).toMatchObject({ owner: 'owner-a', token });
        expect(lease!.expiresAt).toBeInstanceOf(Date);
        const expiresAt = lease!.expiresAt.getTime();
        // Remote clocks (Redis TIME, PostgreSQL now()) may round to the millisecond or the second.
        expect(expiresAt).toBeGreaterThanOrEqual(before + longTtl - 1_000);
        expect(expiresAt).toBeLessThanOrEqual(after + longTtl + 1_000);
        expect(await store.renew(key(), 'owner-a', longTtl * 2)).toBe(true);
        expect((await store.inspect(key()))!.expiresAt.getTime()).toBeGreaterThan(expiresAt);
      });

      it(
        'returns undefined for a free, a released and an expired key',
        async (context) => {
          const { store, key } = await setUp();
          if (!store.inspect) return skipTest(context, 'the store has no inspect()');
          expect(await store.inspect(key())).toBeUndefined();
          await store.acquire(key(), 'owner-a', longTtl);
          await store.release(key(), 'owner-a');
          expect(await store.inspect(key())).toBeUndefined();
          await store.acquire(key(), 'owner-a', ttl);
          await sleep(ttl + 50);
          expect(await store.inspect(key())).toBeUndefined();
        },
        timeout,
      );
    });

    describe('onRelease', () => {
      it('calls the listener once it is in place, then after each release of the key; a throwing listener changes nothing', async (context) => {
        const { store, key } = await setUp();
        if (!store.onRelease) return skipTest(context, 'the store has no onRelease()');
        const throwing = store.onRelease(key(), () => {
          throw new Error('a listener bug');
        });
        const listener = listen(store, key());
        try {
          await listener.nextCall('the first call, once the subscription is in place');
          await store.acquire(key(), 'owner-a', longTtl);
          await store.release(key(), 'owner-a');
          await listener.nextCall('a call after the release');
          expect(await store.acquire(key(), 'owner-b', longTtl)).toBeDefined();
          await store.release(key(), 'owner-b');
          await listener.nextCall('a call after the second release');
        } finally {
          throwing();
          listener.unsubscribe();
        }
      });

      it('is not called for another key, for a release by someone who is not the owner, nor after it unsubscribed', async (context) => {
        const { store, key } = await setUp();
        if (!store.onRelease) return skipTest(context, 'the store has no onRelease()');
        const mine = listen(store, key('mine'));
        const other = listen(store, key('other'));
        try {
          await mine.nextCall('the first call on "mine"');
          await other.nextCall('the first call on "other"');
          await store.acquire(key('mine'), 'owner-a', longTtl);
          await store.release(key('mine'), 'owner-b');
          await store.acquire(key('other'), 'owner-a', longTtl);
          await store.release(key('other'), 'owner-a');
          // Notifications come in order: "other"'s release arrives after anything the wrong owner's
          // release or "other"'s could have sent to "mine".
          await other.nextCall('a call after the release of "other"');
          expect(mine.calls, 'calls of "mine" after its first').toBe(0);
          await store.release(key('mine'), 'owner-a');
          await mine.nextCall('a call after the release of "mine"');
          mine.unsubscribe();
          const later = listen(store, key('mine'));
          await later.nextCall('the first call of a new listener on "mine"');
          await store.acquire(key('mine'), 'owner-c', longTtl);
          await store.release(key('mine'), 'owner-c');
          await later.nextCall('a call of the new listener after a release');
          later.unsubscribe();
          expect(mine.calls, 'calls of "mine" after it unsubscribed').toBe(1);
        } finally {
          mine.unsubscribe();
          other.unsubscribe();
        }
      });

      it('is called for a release through another store on the same backend', async (context) => {
        const namespace = uniqueNamespace();
        const [listening, releasing] = [await factory(namespace), await factory(namespace)];
        if (!listening.onRelease) return skipTest(context, 'the store has no onRelease()');
        const key = `${namespace}shared`;
        await releasing.acquire(key, 'owner-a', longTtl);
        if ((await listening.acquire(key, 'owner-b', longTtl)) !== undefined) {
          return skipTest(
            context,
            'two stores made by the factory do not share leases (an in-process store)',
          );
        }
        const listener = listen(listening, key);
        try {
          await listener.nextCall('the first call, once the subscription is in place');
          await releasing.release(key, 'owner-a');
          await listener.nextCall("a call after the other store's release");
        } finally {
          listener.unsubscribe();
        }
      });
    });

    describe('now', () => {
      it('returns the store clock in epoch ms, close to this machine and never going back', async (context) => {
        const { store } = await setUp();
        if (!store.now) return skipTest(context, 'the store has no now()');
        const first = await store.now();
        expect(Number.isFinite(first)).toBe(true);
        // Generous: only catches seconds-vs-milliseconds and similar unit mistakes.
        expect(Math.abs(first - Date.now())).toBeLessThan(5 * 60_000);
        await sleep(20);
        const second = await store.now();
        expect(second).toBeGreaterThanOrEqual(first);
        expect(second - first).toBeLessThan(5_000);
      });
    });
  });
}
