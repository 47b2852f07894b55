import {
  hasRunLedger,
  isStaleTokenError,
  MemoryLockStore,
  type RunRecord,
  type StaleTokenError,
} from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

const day = 86_400_000;

function setUp() {
  const time = new FakeTimeProvider();
  return { time, store: new MemoryLockStore({ timeProvider: time }) };
}

function run(
  job: string,
  scheduledAt: number,
  token: number,
  outcome: RunRecord['outcome'] = 'success',
): RunRecord {
  return {
    job,
    scheduledAt,
    outcome,
    token,
    instance: 'host:1',
    startedAt: scheduledAt,
    endedAt: scheduledAt + 5,
  };
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
  it('implements RunLedger', () => {
    expect(hasRunLedger(new MemoryLockStore())).toBe(true);
  });

  it('judges retention by its clock on reads too: an occurrence ages out without another write', async () => {
    const { time, store } = setUp();
    const at = time.now();
    await store.recordRun(run('nightly', at, 1), { retentionMs: day });
    expect(await store.isCompleted('nightly', at)).toBe(true);
    expect(await store.lastCompleted('nightly')).toBe(at);
    time.setNow(at + day + 1);
    expect(await store.isCompleted('nightly', at)).toBe(false);
    expect(await store.lastCompleted('nightly')).toBeUndefined();
  });

  it('defaults to 7 days of retention', async () => {
    const { time, store } = setUp();
    const at = time.now();
    await store.recordRun(run('nightly', at, 1));
    time.setNow(at + 7 * day);
    expect(await store.isCompleted('nightly', at)).toBe(true);
    time.setNow(at + 7 * day + 1);
    expect(await store.isCompleted('nightly', at)).toBe(false);
  });

  it('refuses a stale token with the job, the token and the highest token seen', async () => {
    const { time, store } = setUp();
    await store.recordRun(run('nightly', time.now(), 7));
    const error = await store.recordRun(run('nightly', time.now() + 1, 6)).catch((caught: unknown) => caught);
    expect(isStaleTokenError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'STALE_TOKEN', resource: 'nightly', token: 6, highestToken: 7 });
    expect((error as StaleTokenError).message).toContain('6');
  });

  it('returns copies: callers cannot change the ledger through a record', async () => {
    const { time, store } = setUp();
    const record = run('nightly', time.now(), 1);
    await store.recordRun(record);
    const [kept] = await store.runHistory('nightly');
    (kept as { outcome: string }).outcome = 'failure';
    expect((await store.runHistory('nightly'))[0]!.outcome).toBe('success');
  });
});
