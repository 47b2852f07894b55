/**
 * What a waiter gains from a store's release wake-ups (`LockStore.onRelease`), through the lock
 * strategy and the store's real server: the same two tests for every store that wakes waiters.
 */
import { type Duration, type LockStore, ResiliencePipelineBuilder } from 'resil';
import { expect, it } from 'vitest';
import { deferred } from '../strategies/lock/recording-store.ts';
import { waitUntil } from './processes.ts';

const ttl = 30_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A callback that holds the lock until `release()`. */
export function heldUntilReleased(): { hold: () => Promise<void>; release: () => void } {
  const { promise, resolve } = deferred();
  return { hold: () => promise, release: () => resolve() };
}

/** A pipeline that locks `key` on `store`, waiting up to `wait`. */
export function lockOn(store: LockStore, key: string, wait: Duration = '10s') {
  return new ResiliencePipelineBuilder().addLock({ key: () => key, ttl, wait, store }).build();
}

/**
 * Registers the wake-up timing tests; `makeStore(name)` gives a fresh store (`name` may serve as
 * its prefix), closed by the test.
 */
export function itWakesWaitersOnRelease(makeStore: (name: string) => LockStore & { close(): Promise<void> }) {
  it('a waiter acquires as soon as the holder releases, not at its next poll', async () => {
    const store = makeStore('wake:');
    const lock = lockOn(store, 'soon');
    const holder = heldUntilReleased();
    const holding = lock.execute(holder.hold);
    await waitUntil('the holder to hold', async () => (await store.inspect!('soon')) !== undefined);
    const waitStartedAt = performance.now();
    let acquiredAt = 0;
    const waiting = lock.execute(() => {
      acquiredAt = performance.now();
    });
    // Just past the poll at 1.55 s: the next one would come at 2.55 s.
    await sleep(1_650 - (performance.now() - waitStartedAt));
    const releasedAt = performance.now();
    holder.release();
    await holding;
    await waiting;
    expect(acquiredAt - releasedAt).toBeLessThan(500);
    await store.close();
  });

  it('8 waiters on one key holding it 10 ms each all run in a fraction of what polling alone takes', async () => {
    const store = makeStore('drain:');
    const lock = lockOn(store, 'busy');
    const startedAt = performance.now();
    const ran = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        lock.execute(async () => {
          await sleep(10);
          return index;
        }),
      ),
    );
    expect(ran.sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // Polling alone (50 ms doubling to 1 s, in lockstep) took 3.5 s here; the ideal is 80 ms.
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    await store.close();
  });
}
