import { systemTimeProvider } from 'resil';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { type Deadline, DeadlineQueue } from '../../src/strategies/timeout/deadline-queue.ts';

function deadline(name: string, expired: string[]): Deadline {
  return {
    dueAt: 0,
    previous: undefined,
    next: undefined,
    queued: false,
    expire: () => expired.push(name),
  };
}

describe('DeadlineQueue', () => {
  it('expires deadlines in due order, also when added out of order', async () => {
    const time = new FakeTimeProvider();
    const queue = new DeadlineQueue(time);
    const expired: string[] = [];
    queue.add(deadline('c', expired), 300);
    queue.add(deadline('a', expired), 100);
    queue.add(deadline('b', expired), 200);
    queue.add(deadline('b2', expired), 200);
    expect(time.pendingTimers).toBe(1);
    await time.advance(100);
    expect(expired).toEqual(['a']);
    await time.advance(200);
    expect(expired).toEqual(['a', 'b', 'b2', 'c']);
    expect(time.pendingTimers).toBe(0);
  });

  it('removing the head re-arms lazily; removing the last clears the timer', async () => {
    const time = new FakeTimeProvider();
    const queue = new DeadlineQueue(time);
    const expired: string[] = [];
    const a = deadline('a', expired);
    const b = deadline('b', expired);
    queue.add(a, 100);
    queue.add(b, 200);
    queue.remove(a);
    queue.remove(a); // twice is harmless
    expect(time.pendingTimers).toBe(1);
    await time.advance(100); // the timer armed for a fires, finds nothing due, re-arms for b
    expect(expired).toEqual([]);
    expect(time.pendingTimers).toBe(1);
    await time.advance(100);
    expect(expired).toEqual(['b']);
    queue.remove(b); // already expired: no-op
    const c = deadline('c', expired);
    queue.add(c, 50);
    queue.remove(c);
    expect(time.pendingTimers).toBe(0);
  });

  it('tolerates expire() adding and removing deadlines', async () => {
    const time = new FakeTimeProvider();
    const queue = new DeadlineQueue(time);
    const expired: string[] = [];
    const later = deadline('later', expired);
    const first: Deadline = {
      ...deadline('first', expired),
      expire() {
        expired.push('first');
        queue.remove(later);
        queue.add(deadline('added', expired), 10);
      },
    };
    queue.add(first, 10);
    queue.add(later, 10);
    await time.advance(10);
    expect(expired).toEqual(['first']);
    await time.advance(10);
    expect(expired).toEqual(['first', 'added']);
    expect(time.pendingTimers).toBe(0);
  });

  it('on the system clock, expires on time and clears its timer at the end of the event-loop turn', async () => {
    const queue = new DeadlineQueue(systemTimeProvider);
    const expired: string[] = [];
    const started = performance.now();
    await new Promise<void>((resolve) => {
      queue.add({ ...deadline('a', expired), expire: () => resolve(expired.push('a') as never) }, 20);
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(19);
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const b = deadline('b', expired);
    queue.add(b, 30_000);
    queue.remove(b);
    await new Promise((resolve) => setImmediate(resolve));
    const timersAfter = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    expect(timersAfter).toBeLessThanOrEqual(timersBefore);
    expect(expired).toEqual(['a']);
  });
});
