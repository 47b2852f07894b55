import {
  type ClaimRequest,
  hasRunLedger,
  isStaleTokenError,
  MemoryLockStore,
  type StaleTokenError,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

const day = 86_400_000;

function setUp() {
  const time = new FakeTimeProvider();
  return { time, store: new MemoryLockStore({ timeProvider: time }) };
}

describe('MemoryLockStore: leases', () => {
  it('judges expiry by its time provider, to the millisecond', async () => {
    const { time, store } = setUp();
    expect(await store.acquire('k', 'a', 1_000)).toBe(1);
    await time.advance(999);
    expect(await store.acquire('k', 'b', 1_000)).toBeUndefined();
    expect(await store.renew('k', 'a', 1_000)).toBe(true);
    await time.advance(999);
    expect(await store.inspect('k')).toMatchObject({ owner: 'a', token: 1 });
    await time.advance(1);
    expect(await store.inspect('k')).toBeUndefined();
    expect(await store.renew('k', 'a', 1_000)).toBe(false);
    expect(await store.acquire('k', 'b', 1_000)).toBe(2);
  });

  it('uses the wall clock of its time provider, as remote stores use theirs', async () => {
    const { time, store } = setUp();
    await store.acquire('k', 'a', 60_000);
    expect((await store.inspect('k'))!.expiresAt).toEqual(new Date(time.now() + 60_000));
    time.setNow(time.now() + 60_000);
    expect(await store.inspect('k')).toBeUndefined();
    expect(await store.now()).toBe(time.now());
  });

  it('keeps one token counter per key: tokens strictly increase across release and expiry', async () => {
    const { time, store } = setUp();
    const tokens: number[] = [];
    for (let round = 0; round < 5; round++) {
      tokens.push((await store.acquire('k', `owner-${round}`, 100))!);
      if (round % 2) await store.release('k', `owner-${round}`);
      else await time.advance(100);
    }
    expect(tokens).toEqual([1, 2, 3, 4, 5]);
    expect(await store.acquire('other', 'a', 100)).toBe(1);
  });

  it('is atomic per key under concurrent acquirers', async () => {
    const { store } = setUp();
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, index) => store.acquire('k', `o${index}`, 1_000)),
    );
    expect(results.filter((token) => token !== undefined)).toEqual([1]);
  });

  it('ignores a release by a non-holder and a release after expiry', async () => {
    const { time, store } = setUp();
    await store.acquire('k', 'a', 100);
    await store.release('k', 'b');
    expect((await store.inspect('k'))?.owner).toBe('a');
    await time.advance(100);
    await store.acquire('k', 'b', 100);
    await store.release('k', 'a');
    expect((await store.inspect('k'))?.owner).toBe('b');
  });

  it('defaults to the system clock', async () => {
    const store = new MemoryLockStore();
    const now = await store.now();
    expect(Math.abs(now - Date.now())).toBeLessThan(1_000);
  });
});

describe('MemoryLockStore: run ledger', () => {
  const claim = (store: MemoryLockStore, scheduledAt: number, overrides: Partial<ClaimRequest> = {}) =>
    store.claimOccurrence({
      job: 'nightly',
      key: 'nightly',
      scheduledAt,
      owner: `owner-${Math.random()}`,
      instance: 'host:1',
      ttlMs: 30_000,
      overlap: 'skip',
      startingDeadlineMs: 60_000,
      ...overrides,
    });

  it('implements RunLedger', () => {
    expect(hasRunLedger(new MemoryLockStore())).toBe(true);
  });

  it('judges takeover by its time provider: the lease is taken over once expired, not a millisecond before', async () => {
    const { time, store } = setUp();
    const at = time.now();
    const first = await claim(store, at);
    expect(first.status).toBe('granted');
    await time.advance(29_999);
    expect(await claim(store, at)).toMatchObject({
      status: 'wait',
      runningElsewhere: true,
      retryAt: at + 30_000,
    });
    await time.advance(1);
    expect(await claim(store, at)).toMatchObject({ status: 'granted', takeover: true });
  });

  it('defaults to 7 days of retention', async () => {
    const { time, store } = setUp();
    const at = time.now();
    const old = await claim(store, at);
    if (old.status !== 'granted') throw new Error('not granted');
    await store.finishOccurrence(old.lease, { outcome: 'success' });
    time.setNow(at + 7 * day);
    const recent = await claim(store, time.now());
    if (recent.status !== 'granted') throw new Error('not granted');
    await store.finishOccurrence(recent.lease, { outcome: 'success' });
    expect(await store.lastCompleted('nightly')).toBe(time.now());
    expect((await store.runHistory('nightly')).map((record) => record.scheduledAt)).toEqual([time.now(), at]);
    time.setNow(at + 7 * day + 1);
    const later = await claim(store, time.now());
    if (later.status !== 'granted') throw new Error('not granted');
    await store.finishOccurrence(later.lease, { outcome: 'success' });
    expect(await store.runHistory('nightly')).toHaveLength(2);
  });

  it('refuses a stale token with the job, the token and the highest token seen', async () => {
    const { time, store } = setUp();
    const granted = await claim(store, time.now());
    if (granted.status !== 'granted') throw new Error('not granted');
    const error = await store
      .finishOccurrence({ ...granted.lease, token: granted.lease.token - 1 }, { outcome: 'success' })
      .catch((caught: unknown) => caught);
    expect(isStaleTokenError(error)).toBe(true);
    expect(error).toMatchObject({
      code: 'STALE_TOKEN',
      resource: 'nightly',
      highestToken: granted.lease.token,
    });
    expect((error as StaleTokenError).message).toContain(String(granted.lease.token - 1));
  });

  it('returns copies: callers cannot change the ledger through a record', async () => {
    const { time, store } = setUp();
    const granted = await claim(store, time.now());
    if (granted.status !== 'granted') throw new Error('not granted');
    await store.finishOccurrence(granted.lease, { outcome: 'success' });
    const [kept] = await store.runHistory('nightly');
    (kept as { outcome: string }).outcome = 'failure';
    expect((await store.runHistory('nightly'))[0]!.outcome).toBe('success');
  });
});
