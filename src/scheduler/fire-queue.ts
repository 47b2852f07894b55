import { maxTimerDelay, type TimeProvider, type TimerHandle } from '../pipeline/time.ts';

/** One entry of a {@link FireQueue}: when it is due next. */
export interface DueEntry {
  /** Epoch ms on the wall clock (`TimeProvider.now()`). The queue updates it from `onDue`. */
  dueAt: number;
  /** Breaks ties: entries due at the same instant come out in ascending order. */
  readonly order: number;
}

export interface FireQueueOptions<Entry extends DueEntry> {
  readonly time: TimeProvider;
  /**
   * Called for each due entry, earliest first, with the wall clock it was found due at. Returns
   * the entry's next due instant (later than `now`), `undefined` to drop the entry (as a throw
   * does), or a function that returns either: it is called on a timer of its own once the wake
   * is over, so that what the wake started (a fire's claim, a job's start) does not wait for it.
   */
  readonly onDue: (entry: Entry, now: number) => NextDue;
  /**
   * Told when the wall clock moved `stepMs` more (or less, when negative) than the monotonic
   * clock since the last check: an NTP step, a VM resumed, a clock set by hand.
   */
  readonly onClockStep?: (stepMs: number) => void;
  /** The longest the queue sleeps before it reads the wall clock again. Defaults to 1 s. */
  readonly recheckEveryMs?: number;
  /**
   * Called on the early wake `prepareLeadMs` before an instant (see the class), so that what the
   * instant's fires need first (a connection to the store) is awake when they start.
   */
  readonly onPrepare?: () => void;
  /** How long before an instant the queue wakes first. Defaults to 5 ms. */
  readonly prepareLeadMs?: number;
}

/** An entry's next due instant, `undefined` for none, or a function that tells it later. */
export type NextDue = number | undefined | (() => number | undefined);

/** How long before an instant the queue wakes first, by default. */
const defaultPrepareLeadMs = 5;

/** Wall-clock moves against the monotonic clock smaller than this are drift, not a step. */
const clockStepThresholdMs = 1_000;

/**
 * A min-heap of entries by due instant, woken by one timer on the `TimeProvider` however many
 * entries it holds.
 *
 * Due instants are on the wall clock and timers run on the monotonic one, so the queue never
 * trusts a timer: on every wake it reads `now()` and hands out only what is due by then. A timer
 * that fires early finds nothing due and re-arms; a wall clock stepped forward is noticed within
 * `recheckEveryMs` (the longest sleep), and one stepped back makes the queue wait for it. Sleeps
 * are also capped at 2^31 - 1 ms, the longest a timer can hold.
 *
 * A sleep that ends on an instant wakes `prepareLeadMs` before it first (calling `onPrepare`),
 * then on the instant: a process that slept for seconds starts its fires about a ms later than
 * one just awake (docs/benchmarks.md).
 *
 * @example
 * const queue = new FireQueue({ time, onDue: (entry, now) => nextInstantAfter(now) });
 * queue.add({ dueAt: Date.parse('2026-01-01T02:00:00Z'), order: 0 });
 * queue.start();
 */
export class FireQueue<Entry extends DueEntry> {
  readonly #time: TimeProvider;
  readonly #onDue: FireQueueOptions<Entry>['onDue'];
  readonly #onClockStep: FireQueueOptions<Entry>['onClockStep'];
  readonly #recheckEveryMs: number;
  readonly #onPrepare: (() => void) | undefined;
  readonly #prepareLeadMs: number;
  /** The instant `onPrepare` was last called for. */
  #preparedFor: number | undefined;
  readonly #heap: Entry[] = [];
  #running = false;
  /** True while due entries are handed out: the wake arms the timer once when done. */
  #waking = false;
  #timer: TimerHandle | undefined;
  /** Entries out of the heap until their next instant is known (see `onDue`), and that timer. */
  #later: Array<readonly [Entry, () => number | undefined]> = [];
  #laterTimer: TimerHandle | undefined;
  /** Both clocks when the timer was armed: a wake compares how far each moved. */
  #armedWall = 0;
  #armedMonotonic = 0;

  constructor(options: FireQueueOptions<Entry>) {
    this.#time = options.time;
    this.#onDue = options.onDue;
    this.#onClockStep = options.onClockStep;
    this.#recheckEveryMs = options.recheckEveryMs ?? 1_000;
    this.#onPrepare = options.onPrepare;
    this.#prepareLeadMs = options.prepareLeadMs ?? defaultPrepareLeadMs;
  }

  get size(): number {
    return this.#heap.length;
  }

  /** The entry due first. */
  peek(): Entry | undefined {
    return this.#heap[0];
  }

  add(entry: Entry): void {
    this.#push(entry);
    if (this.#running && !this.#waking && this.#heap[0] === entry) this.#arm();
  }

  /** Arms the timer; due entries are handed out from now on. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#arm();
  }

  /** Clears the timer: nothing is handed out until `start()` again. */
  stop(): void {
    this.#running = false;
    this.#clearTimer();
    this.#settleLater();
  }

  #arm(): void {
    this.#clearTimer();
    const first = this.#heap[0];
    if (!this.#running || first === undefined) return;
    this.#armedWall = this.#time.now();
    this.#armedMonotonic = this.#time.monotonic();
    const untilDue = first.dueAt - this.#armedWall;
    const waitMs = Math.min(Math.max(untilDue, 0), this.#recheckEveryMs, maxTimerDelay);
    // The instant comes within this sleep: wake a little before it first (see the class).
    if (waitMs === untilDue && untilDue > this.#prepareLeadMs && this.#preparedFor !== first.dueAt) {
      this.#timer = this.#time.setTimeout(this.#prepare, untilDue - this.#prepareLeadMs);
      return;
    }
    this.#timer = this.#time.setTimeout(this.#wake, waitMs);
  }

  readonly #prepare = (): void => {
    this.#timer = undefined;
    const first = this.#heap[0];
    if (!this.#running || first === undefined) return;
    this.#preparedFor = first.dueAt;
    try {
      this.#onPrepare?.();
    } catch {
      // Only a head start: the instant's fires do without it.
    }
    if (this.#timer !== undefined) return;
    // The rest of the same sleep: its wake compares both clocks since it began, so a clock step
    // during the sleep is still told.
    const waitMs = Math.min(Math.max(first.dueAt - this.#time.now(), 0), this.#recheckEveryMs);
    // Late already (a busy loop): no timer hop before the wake.
    if (waitMs === 0) this.#wake();
    else this.#timer = this.#time.setTimeout(this.#wake, waitMs);
  };

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    this.#time.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  readonly #wake = (): void => {
    this.#timer = undefined;
    if (!this.#running) return;
    const now = this.#time.now();
    const stepMs = now - this.#armedWall - (this.#time.monotonic() - this.#armedMonotonic);
    if (Math.abs(stepMs) >= clockStepThresholdMs) this.#onClockStep?.(stepMs);
    this.#waking = true;
    try {
      // Bounded by the size: an entry that comes back due at once waits for the next wake.
      for (let left = this.#heap.length; left > 0 && this.#running; left--) {
        const first = this.#heap[0];
        if (first === undefined || first.dueAt > now) break;
        this.#removeFirst();
        const next = this.#onDue(first, now);
        if (typeof next === 'function') this.#later.push([first, next]);
        else if (next !== undefined) {
          first.dueAt = next;
          this.#push(first);
        }
      }
    } finally {
      this.#waking = false;
      if (this.#later.length > 0) this.#laterTimer ??= this.#time.setTimeout(this.#settleLater, 0);
      this.#arm();
    }
  };

  /** Puts the entries whose next instant was left for later back in the heap. */
  readonly #settleLater = (): void => {
    if (this.#laterTimer !== undefined) {
      this.#time.clearTimeout(this.#laterTimer);
      this.#laterTimer = undefined;
    }
    const later = this.#later;
    if (later.length === 0) return;
    this.#later = [];
    for (const [entry, nextDue] of later) {
      let next: number | undefined;
      try {
        next = nextDue();
      } catch {
        next = undefined;
      }
      if (next !== undefined) {
        entry.dueAt = next;
        this.#push(entry);
      }
    }
    if (this.#running) this.#arm();
  };

  #push(entry: Entry): void {
    this.#heap.push(entry);
    this.#siftUp(this.#heap.length - 1);
  }

  #removeFirst(): void {
    const last = this.#heap.pop()!;
    if (this.#heap.length === 0) return;
    this.#heap[0] = last;
    this.#siftDown(0);
  }

  #before(a: Entry, b: Entry): boolean {
    return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.order < b.order);
  }

  #siftUp(index: number): void {
    const heap = this.#heap;
    const entry = heap[index]!;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!this.#before(entry, heap[parent]!)) break;
      heap[index] = heap[parent]!;
      index = parent;
    }
    heap[index] = entry;
  }

  #siftDown(index: number): void {
    const heap = this.#heap;
    const entry = heap[index]!;
    for (;;) {
      let child = 2 * index + 1;
      if (child >= heap.length) break;
      if (child + 1 < heap.length && this.#before(heap[child + 1]!, heap[child]!)) child++;
      if (!this.#before(heap[child]!, entry)) break;
      heap[index] = heap[child]!;
      index = child;
    }
    heap[index] = entry;
  }
}
