import { delay } from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

describe('FakeTimeProvider', () => {
  it('starts at 2026-01-01T00:00:00Z with monotonic 0, or at the given instant', () => {
    const time = new FakeTimeProvider();
    expect(time.now()).toBe(Date.UTC(2026, 0, 1));
    expect(time.monotonic()).toBe(0);
    expect(new FakeTimeProvider(new Date('2030-05-01T00:00:00Z')).now()).toBe(Date.UTC(2030, 4, 1));
    expect(new FakeTimeProvider(1_000).now()).toBe(1_000);
  });

  it('runs a timer only once its due time is reached', async () => {
    const time = new FakeTimeProvider();
    const fired: number[] = [];
    time.setTimeout(() => fired.push(time.monotonic()), 100);
    await time.advance(99);
    expect(fired).toEqual([]);
    expect(time.pendingTimers).toBe(1);
    await time.advance(1);
    expect(fired).toEqual([100]);
    expect(time.pendingTimers).toBe(0);
  });

  it('runs due timers in due order, each at its own instant, equal deadlines first-in first-out', async () => {
    const time = new FakeTimeProvider();
    const fired: string[] = [];
    time.setTimeout(() => fired.push(`c@${time.monotonic()}`), 30);
    time.setTimeout(() => fired.push(`a@${time.monotonic()}`), 10);
    time.setTimeout(() => fired.push(`b1@${time.monotonic()}`), 20);
    time.setTimeout(() => fired.push(`b2@${time.monotonic()}`), 20);
    await time.advance(100);
    expect(fired).toEqual(['a@10', 'b1@20', 'b2@20', 'c@30']);
    expect(time.monotonic()).toBe(100);
    expect(time.now()).toBe(Date.UTC(2026, 0, 1) + 100);
  });

  it('lets promise continuations settle between timers, so chained delays complete in one advance', async () => {
    const time = new FakeTimeProvider();
    const steps: number[] = [];
    const chain = (async () => {
      for (let i = 0; i < 3; i++) {
        await delay(time, 100);
        await Promise.resolve();
        steps.push(time.monotonic());
      }
    })();
    await time.advance(300);
    expect(steps).toEqual([100, 200, 300]);
    await chain;
  });

  it('runs timers scheduled by a timer when they fall due within the same advance', async () => {
    const time = new FakeTimeProvider();
    const fired: number[] = [];
    time.setTimeout(() => {
      fired.push(time.monotonic());
      time.setTimeout(() => fired.push(time.monotonic()), 0);
      time.setTimeout(() => fired.push(time.monotonic()), 50);
    }, 10);
    await time.advance(40);
    expect(fired).toEqual([10, 10]);
    await time.advance(20);
    expect(fired).toEqual([10, 10, 60]);
  });

  it('clearTimeout removes a pending timer and ignores unknown handles', async () => {
    const time = new FakeTimeProvider();
    let fired = false;
    const handle = time.setTimeout(() => {
      fired = true;
    }, 10);
    time.clearTimeout(handle);
    time.clearTimeout(12345);
    time.clearTimeout(undefined);
    expect(time.pendingTimers).toBe(0);
    await time.advance(20);
    expect(fired).toBe(false);
  });

  it('treats negative and NaN delays as 0', async () => {
    const time = new FakeTimeProvider();
    const fired: number[] = [];
    time.setTimeout(() => fired.push(1), -5);
    time.setTimeout(() => fired.push(2), Number.NaN);
    await time.advance(0);
    expect(fired).toEqual([1, 2]);
  });

  it('rejects a negative or NaN advance', async () => {
    const time = new FakeTimeProvider();
    await expect(time.advance(-1)).rejects.toThrow(/advance\(ms\) needs ms >= 0, got -1/);
    await expect(time.advance(Number.NaN)).rejects.toThrow(RangeError);
  });

  it('setNow jumps the wall clock only', async () => {
    const time = new FakeTimeProvider();
    let fired = false;
    time.setTimeout(() => {
      fired = true;
    }, 1_000);
    time.setNow(Date.UTC(2027, 0, 1));
    expect(time.now()).toBe(Date.UTC(2027, 0, 1));
    expect(time.monotonic()).toBe(0);
    expect(fired).toBe(false);
    await time.advance(1_000);
    expect(fired).toBe(true);
    expect(time.now()).toBe(Date.UTC(2027, 0, 1) + 1_000);
  });
});
