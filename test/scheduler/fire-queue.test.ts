import { describe, expect, it } from 'vitest';
import { maxTimerDelay } from '../../src/pipeline/time.ts';
import { type DueEntry, FireQueue } from '../../src/scheduler/fire-queue.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';
import { RecordingTimeProvider } from './fixtures.ts';

const start = Date.parse('2026-01-01T00:00:00.000Z');

interface Entry extends DueEntry {
  readonly name: string;
  /** Due again this long after each time it is handed out; undefined: once. */
  readonly everyMs?: number;
}

function setup(
  time: FakeTimeProvider = new FakeTimeProvider(start),
  recheckEveryMs?: number,
  prepareLeadMs?: number,
) {
  const handed: Array<{ name: string; dueAt: number; now: number }> = [];
  const steps: number[] = [];
  const queue = new FireQueue<Entry>({
    time,
    onDue: (entry, now) => {
      handed.push({ name: entry.name, dueAt: entry.dueAt, now });
      return entry.everyMs === undefined ? undefined : entry.dueAt + entry.everyMs;
    },
    onClockStep: (stepMs) => steps.push(stepMs),
    recheckEveryMs,
    prepareLeadMs,
  });
  return { time, queue, handed, steps };
}

describe('FireQueue', () => {
  it('hands out entries in due order (ties in their order) on one timer, however many it holds', async () => {
    const { time, queue, handed } = setup();
    for (let i = 0; i < 1_000; i++) {
      queue.add({ name: `e${i}`, dueAt: start + 10_000 + ((i * 7_919) % 1_000) * 100, order: i });
    }
    queue.add({ name: 'tie-b', dueAt: start + 5_000, order: 2_000 });
    queue.add({ name: 'tie-a', dueAt: start + 5_000, order: 1_001 });
    queue.start();
    expect(time.pendingTimers).toBe(1);
    await time.advance(10_000 + 1_000 * 100);
    expect(handed).toHaveLength(1_002);
    expect(handed.slice(0, 2).map((entry) => entry.name)).toEqual(['tie-a', 'tie-b']);
    const dueTimes = handed.map((entry) => entry.dueAt);
    expect(dueTimes).toEqual([...dueTimes].sort((a, b) => a - b));
    // Each was handed out on its instant, not a millisecond before or after.
    expect(handed.every((entry) => entry.now === entry.dueAt)).toBe(true);
    expect(queue.size).toBe(0);
    expect(time.pendingTimers).toBe(0);
  });

  it('an entry whose next instant onDue leaves for later is out of the queue until a timer of its own tells it; stop() puts it back; a throw drops it', async () => {
    // As Node's timers do: a 0 ms timer waits 1 ms.
    const time = new (class extends FakeTimeProvider {
      override setTimeout(callback: () => void, ms: number) {
        return super.setTimeout(callback, Math.max(ms, 1));
      }
    })(start);
    const events: string[] = [];
    const queue = new FireQueue<Entry>({
      time,
      onDue: (entry, now) => {
        events.push(`due ${entry.name} ${now - start}`);
        if (entry.name === 'broken') {
          return () => {
            throw new Error('no next instant');
          };
        }
        return () => {
          events.push(`next of ${entry.name}`);
          return entry.dueAt + entry.everyMs!;
        };
      },
    });
    queue.add({ name: 'tick', dueAt: start + 1_000, order: 0, everyMs: 1_000 });
    queue.add({ name: 'broken', dueAt: start + 1_000, order: 1 });
    queue.start();
    await time.advance(1_000);
    // Both due; the next instants once the wake is over, on a timer of their own.
    expect(events).toEqual(['due tick 1000', 'due broken 1000']);
    expect(queue.size).toBe(0);
    await time.advance(1);
    expect(events.slice(2)).toEqual(['next of tick']);
    expect(queue.size).toBe(1);
    await time.advance(999);
    expect(events.slice(3)).toEqual(['due tick 2000']);
    // Stopped before that timer: the entry is back in the queue at its next instant.
    queue.stop();
    expect(events.slice(4)).toEqual(['next of tick']);
    expect(queue.peek()?.dueAt).toBe(start + 3_000);
    expect(time.pendingTimers).toBe(0);
  });

  it('re-queues an entry at the instant onDue returns', async () => {
    const { time, queue, handed } = setup();
    queue.add({ name: 'tick', dueAt: start + 1_000, order: 0, everyMs: 1_000 });
    queue.start();
    await time.advance(3_500);
    expect(handed.map((entry) => entry.now - start)).toEqual([1_000, 2_000, 3_000]);
    expect(queue.peek()?.dueAt).toBe(start + 4_000);
    queue.stop();
    expect(time.pendingTimers).toBe(0);
    await time.advance(5_000);
    expect(handed).toHaveLength(3);
  });

  it('never sleeps longer than 1 s before reading the wall clock again', async () => {
    const time = new RecordingTimeProvider(start);
    const { queue, handed } = setup(time);
    queue.add({ name: 'in-an-hour', dueAt: start + 3_600_000, order: 0 });
    queue.start();
    await time.advance(10_500);
    expect(time.delays).toEqual(Array(11).fill(1_000));
    expect(handed).toHaveLength(0);
    expect(time.pendingTimers).toBe(1);
  });

  it('chunks a wait longer than one timer can hold (2^31 - 1 ms) and hands the entry out on its instant', async () => {
    const time = new RecordingTimeProvider(start);
    // No early wake (its lead is 0): the timers are the sleep's alone.
    const { queue, handed } = setup(time, Number.POSITIVE_INFINITY, 0);
    const dueAt = start + 30 * 86_400_000; // 2,592,000,000 ms away
    queue.add({ name: 'in-30-days', dueAt, order: 0 });
    queue.start();
    expect(time.delays).toEqual([maxTimerDelay]);
    await time.advance(maxTimerDelay);
    expect(handed).toHaveLength(0);
    expect(time.delays).toEqual([maxTimerDelay, dueAt - start - maxTimerDelay]);
    await time.advance(dueAt - start - maxTimerDelay);
    expect(handed).toEqual([{ name: 'in-30-days', dueAt, now: dueAt }]);
  });

  it('a timer that fires early finds nothing due and re-arms for the rest', async () => {
    const time = new RecordingTimeProvider(start);
    time.earlyByMs = 300;
    // No early wake (its lead is 0): the timers are the sleep's alone.
    const { queue, handed } = setup(time, undefined, 0);
    queue.add({ name: 'soon', dueAt: start + 1_000, order: 0 });
    queue.start();
    await time.advance(699);
    await time.advance(1); // the timer fires here, 300 ms early
    expect(handed).toHaveLength(0);
    expect(time.delays).toEqual([1_000, 300]);
    await time.advance(300);
    expect(handed).toEqual([{ name: 'soon', dueAt: start + 1_000, now: start + 1_000 }]);
  });

  it('notices a wall clock stepped forward within 1 s, and waits for one stepped back', async () => {
    const { time, queue, handed, steps } = setup();
    queue.add({ name: 'noon', dueAt: Date.parse('2026-01-01T12:00:00Z'), order: 0 });
    queue.start();
    await time.advance(5_000);
    time.setNow(Date.parse('2026-01-01T12:00:10Z')); // NTP, or a VM resumed
    await time.advance(1_000);
    expect(handed).toHaveLength(1);
    expect(handed[0]!.now).toBeLessThanOrEqual(Date.parse('2026-01-01T12:00:11Z'));
    expect(steps).toHaveLength(1);
    expect(steps[0]).toBeGreaterThan(11 * 3_600_000);

    queue.add({ name: 'one-pm', dueAt: Date.parse('2026-01-01T13:00:00Z'), order: 1 });
    time.setNow(Date.parse('2026-01-01T12:59:58Z'));
    await time.advance(1_000);
    time.setNow(Date.parse('2026-01-01T12:00:00Z')); // stepped back an hour, a second before the instant
    await time.advance(2_000);
    expect(handed).toHaveLength(1);
    expect(steps.at(-1)).toBeLessThan(-3_500_000);
    time.setNow(Date.parse('2026-01-01T12:59:59.500Z'));
    await time.advance(1_000);
    expect(handed.map((entry) => entry.name)).toEqual(['noon', 'one-pm']);
    expect(handed[1]!.now).toBeGreaterThanOrEqual(handed[1]!.dueAt);
  });

  it('an entry added while running re-arms the timer when it is due first', async () => {
    const { time, queue, handed } = setup(new FakeTimeProvider(start), Number.POSITIVE_INFINITY);
    queue.add({ name: 'later', dueAt: start + 60_000, order: 0 });
    queue.start();
    queue.add({ name: 'sooner', dueAt: start + 1_000, order: 1 });
    expect(time.pendingTimers).toBe(1);
    await time.advance(1_000);
    expect(handed.map((entry) => entry.name)).toEqual(['sooner']);
  });
});

describe('FireQueue: onPrepare', () => {
  it('wakes prepareLeadMs before an instant without onPrepare too, and an early wake that comes late hands out at once', async () => {
    const time = new RecordingTimeProvider(start);
    const { queue, handed } = setup(time);
    queue.add({ name: 'soon', dueAt: start + 1_000, order: 0 });
    queue.add({ name: 'later', dueAt: start + 3_000, order: 1 });
    queue.start();
    await time.advance(2_000);
    // Early, on the instant, a 1 s recheck, then early for 3 s.
    expect(time.delays).toEqual([995, 5, 1_000, 995]);
    expect(handed).toEqual([{ name: 'soon', dueAt: start + 1_000, now: start + 1_000 }]);
    // The early wake for 3 s runs 10 ms late (a busy loop): no timer before the wake.
    time.setNow(time.now() + 10);
    await time.advance(995);
    expect(time.delays).toEqual([995, 5, 1_000, 995]);
    expect(handed.at(-1)).toEqual({ name: 'later', dueAt: start + 3_000, now: start + 3_005 });
  });

  it('is called prepareLeadMs before an instant it slept toward, once an instant, and the entries still come out on the instant', async () => {
    const time = new FakeTimeProvider(start);
    const prepared: number[] = [];
    const handed: number[] = [];
    const queue = new FireQueue<Entry>({
      time,
      onDue: (entry, now) => {
        handed.push(now - start);
        return entry.everyMs === undefined ? undefined : entry.dueAt + entry.everyMs;
      },
      onPrepare: () => prepared.push(time.now() - start),
      prepareLeadMs: 5,
    });
    // Two entries on one instant, every 2.5 s: the first instant is within the 1 s recheck, the
    // next ones beyond it (the queue wakes at the recheck first, then prepares).
    queue.add({ name: 'a', dueAt: start + 500, order: 0, everyMs: 2_500 });
    queue.add({ name: 'b', dueAt: start + 500, order: 1, everyMs: 2_500 });
    queue.start();
    await time.advance(5_600);
    expect(prepared).toEqual([495, 2_995, 5_495]);
    expect(handed).toEqual([500, 500, 3_000, 3_000, 5_500, 5_500]);
  });

  it('tells a wall clock step during a sleep that ends in onPrepare, as during any sleep', async () => {
    const time = new FakeTimeProvider(start);
    const steps: number[] = [];
    const handed: number[] = [];
    let prepares = 0;
    const queue = new FireQueue<Entry>({
      time,
      onDue: (_entry, now) => {
        handed.push(now);
        return undefined;
      },
      onClockStep: (stepMs) => steps.push(stepMs),
      onPrepare: () => prepares++,
      prepareLeadMs: 5,
    });
    queue.add({ name: 'soon', dueAt: start + 500, order: 0 });
    queue.start();
    await time.advance(200);
    time.setNow(time.now() + 3_600_000); // NTP, or a VM resumed, mid-sleep
    await time.advance(300);
    expect(prepares).toBe(1);
    expect(handed).toEqual([start + 3_600_000 + 495]);
    expect(steps).toHaveLength(1);
    expect(steps[0]).toBeGreaterThan(3_500_000);
  });

  it('is not called for an instant nearer than prepareLeadMs, and a throw from it delays nothing', async () => {
    const time = new FakeTimeProvider(start);
    let prepares = 0;
    const handed: number[] = [];
    const queue = new FireQueue<Entry>({
      time,
      onDue: (_entry, now) => {
        handed.push(now - start);
        return undefined;
      },
      onPrepare: () => {
        prepares++;
        throw new Error('store down');
      },
      prepareLeadMs: 5,
    });
    queue.add({ name: 'near', dueAt: start + 3, order: 0 });
    queue.start();
    await time.advance(3);
    expect(prepares).toBe(0);
    queue.add({ name: 'far', dueAt: start + 100, order: 1 });
    await time.advance(100);
    expect(prepares).toBe(1);
    expect(handed).toEqual([3, 100]);
  });
});
