import type { TimeProvider, TimerHandle } from '../pipeline/time.ts';

interface FakeTimer {
  readonly id: number;
  readonly dueAt: number;
  readonly callback: () => void;
}

const flushContinuations: () => Promise<void> =
  typeof setImmediate === 'function'
    ? () => new Promise((resolve) => setImmediate(resolve))
    : () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * A clock that moves only when told to. `await advance(ms)` runs every timer that falls due, in
 * order, and lets the promise continuations they trigger settle before it returns.
 *
 * @example
 * const time = new FakeTimeProvider();
 * const pipeline = new PipelineBuilder({ timeProvider: time }).add(retryStrategy()).build();
 * const result = pipeline.execute(flaky);
 * await time.advance(2_000); // the first retry's delay elapses
 */
export class FakeTimeProvider implements TimeProvider {
  #wallClock: number;
  #monotonic = 0;
  #nextId = 1;
  #timers: FakeTimer[] = [];

  /** @param start wall-clock start in epoch ms (default 2026-01-01T00:00:00Z). */
  constructor(start: number | Date = Date.UTC(2026, 0, 1)) {
    this.#wallClock = typeof start === 'number' ? start : start.getTime();
  }

  now(): number {
    return this.#wallClock;
  }

  monotonic(): number {
    return this.#monotonic;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    // NaN and negative delays run at the current instant, like the global setTimeout.
    const timer = { id: this.#nextId++, dueAt: this.#monotonic + Math.max(ms || 0, 0), callback };
    // Kept sorted by due time, then creation order, so equal deadlines run first-in first-out.
    let index = this.#timers.length;
    while (index > 0 && this.#timers[index - 1]!.dueAt > timer.dueAt) index--;
    this.#timers.splice(index, 0, timer);
    return timer.id;
  }

  clearTimeout(handle: TimerHandle): void {
    const index = this.#timers.findIndex((timer) => timer.id === handle);
    if (index >= 0) this.#timers.splice(index, 1);
  }

  /** Timers scheduled and not yet run or cleared. A finished execution should leave none. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /**
   * Moves both clocks forward by `ms`, running each timer that falls due at its own instant and
   * letting the promise continuations it triggers settle.
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`advance(ms) needs ms >= 0, got ${ms}`);
    const target = this.#monotonic + ms;
    await flushContinuations();
    for (;;) {
      const timer = this.#timers[0];
      if (!timer || timer.dueAt > target) break;
      this.#timers.shift();
      this.#moveTo(timer.dueAt);
      timer.callback();
      await flushContinuations();
    }
    this.#moveTo(target);
    await flushContinuations();
  }

  /** Sets the wall clock only (timers and the monotonic clock are unaffected): a clock jump. */
  setNow(epochMs: number | Date): void {
    this.#wallClock = typeof epochMs === 'number' ? epochMs : epochMs.getTime();
  }

  #moveTo(monotonic: number): void {
    this.#wallClock += monotonic - this.#monotonic;
    this.#monotonic = monotonic;
  }
}
