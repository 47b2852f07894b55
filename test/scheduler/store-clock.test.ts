import { describe, expect, it } from 'vitest';
import { MemoryLockStore } from '../../src/ledger/memory-store.ts';
import { StoreClock } from '../../src/scheduler/store-clock.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';
import { ControlledStore, RecordingLogger } from './fixtures.ts';

const start = Date.parse('2026-01-01T02:00:00.000Z');

describe('StoreClock', () => {
  it('learns the offset to the store clock, crediting half the round trip to each leg', async () => {
    const time = new FakeTimeProvider(start);
    const store = new ControlledStore(time);
    store.skewMs = -2_000;
    store.nowLatencyMs = 4;
    const logger = new RecordingLogger();
    const clock = new StoreClock(store, time, { logger });
    const synced = clock.sync();
    await time.advance(12);
    expect(await synced).toEqual({ offsetMs: -2_000, uncertaintyMs: 2 });
    expect(clock.now()).toBe(time.now() - 2_000);
    expect(logger.lines).toEqual([
      expect.objectContaining({ level: 'warn', offsetMs: -2_000, thresholdMs: 1_000 }),
    ]);
    expect(logger.lines[0]!.msg).toContain('2000 ms ahead of');
  });

  it('logs a small offset at info level, and refreshes quietly', async () => {
    const time = new FakeTimeProvider(start);
    const store = new ControlledStore(time);
    store.skewMs = 30;
    const logger = new RecordingLogger();
    const clock = new StoreClock(store, time, { logger });
    await clock.sync();
    await clock.sync();
    expect(logger.lines.map((line) => [line.level, line.offsetMs])).toEqual([
      ['info', 30],
      ['debug', 30],
    ]);
  });

  it('waits until the store clock reaches the instant, and never resolves before it', async () => {
    const time = new FakeTimeProvider(start);
    const store = new ControlledStore(time);
    store.skewMs = -1_000;
    store.nowLatencyMs = 2;
    const clock = new StoreClock(store, time);
    const synced = clock.sync();
    await time.advance(6);
    await synced;
    let resolvedAt: number | undefined;
    void clock.waitUntil(start + 500).then(() => (resolvedAt = store.clockNow()));
    await time.advance(1_400);
    expect(resolvedAt).toBeUndefined();
    await time.advance(200);
    expect(resolvedAt).toBeGreaterThanOrEqual(start + 500);
    expect(resolvedAt! - (start + 500)).toBeLessThanOrEqual(4);
  });

  it('uses the local clock when the store has none', async () => {
    const time = new FakeTimeProvider(start);
    const store = new MemoryLockStore({ timeProvider: time });
    const bare = {
      acquire: store.acquire.bind(store),
      renew: store.renew.bind(store),
      release: store.release.bind(store),
    };
    const clock = new StoreClock(bare, time);
    expect(clock.hasStoreClock).toBe(false);
    expect(await clock.sync()).toEqual({ offsetMs: 0, uncertaintyMs: 0 });
    let done = false;
    void clock.waitUntil(start + 100).then(() => (done = true));
    await time.advance(99);
    expect(done).toBe(false);
    await time.advance(1);
    expect(done).toBe(true);
  });

  it('rejects with the store error when the store cannot confirm its clock', async () => {
    const time = new FakeTimeProvider(start);
    const store = new ControlledStore(time);
    const clock = new StoreClock(store, time);
    store.down = true;
    await expect(clock.sync()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await expect(clock.waitUntil(start)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });
});
