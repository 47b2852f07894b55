import { systemTimeProvider, type TimeProvider, type TimerHandle } from '../../pipeline/time.ts';

/** One pending deadline; the queue links it in place, so queuing one allocates nothing. */
export interface Deadline {
  /** Monotonic instant at which `expire()` runs; set by `add()`. */
  dueAt: number;
  previous: Deadline | undefined;
  next: Deadline | undefined;
  queued: boolean;
  /** Called once when `dueAt` passes while the deadline is still queued. */
  expire(): void;
}

const runSoon: ((callback: () => void) => void) | undefined =
  typeof setImmediate === 'function' ? (callback) => setImmediate(callback) : undefined;

/**
 * The pending deadlines of one strategy, ordered by `dueAt`, behind a single timer armed for the
 * earliest. With a fixed timeout each new deadline goes to the tail, so adding and removing one is
 * O(1) and a call that completes in time touches no timer at all: per-call timers cost more than
 * the rest of a timeout strategy together.
 *
 * When the queue empties the timer is cleared, so nothing stays scheduled after the last execution
 * and a finished process exits. On the system clock the clear waits for the end of the current
 * event-loop turn (one `setImmediate`), because back-to-back executions would otherwise create and
 * destroy the timer (and Node's timer list behind it) once per call.
 */
export class DeadlineQueue {
  #head: Deadline | undefined;
  #tail: Deadline | undefined;
  #timer: TimerHandle | undefined;
  #timerDueAt = Infinity;
  #clearScheduled = false;
  readonly #time: TimeProvider;
  readonly #deferClear: boolean;

  constructor(time: TimeProvider) {
    this.#time = time;
    this.#deferClear = time === systemTimeProvider && runSoon !== undefined;
  }

  /** Queues `deadline` to expire `ms` from now. */
  add(deadline: Deadline, ms: number): void {
    const now = this.#time.monotonic();
    deadline.dueAt = now + ms;
    deadline.queued = true;
    let before = this.#tail;
    while (before !== undefined && before.dueAt > deadline.dueAt) before = before.previous;
    deadline.previous = before;
    deadline.next = before ? before.next : this.#head;
    if (deadline.next) deadline.next.previous = deadline;
    else this.#tail = deadline;
    if (before) before.next = deadline;
    else this.#head = deadline;
    if (deadline.dueAt < this.#timerDueAt) this.#arm(now);
  }

  /** Unlinks `deadline` if it is still queued (it has neither expired nor been removed). */
  remove(deadline: Deadline): void {
    if (!deadline.queued) return;
    this.#unlink(deadline);
    if (this.#head === undefined && this.#timer !== undefined) {
      if (!this.#deferClear) this.#clearTimer();
      else if (!this.#clearScheduled) {
        this.#clearScheduled = true;
        runSoon!(this.#clearIfIdle);
      }
    }
  }

  #unlink(deadline: Deadline): void {
    deadline.queued = false;
    if (deadline.previous) deadline.previous.next = deadline.next;
    else this.#head = deadline.next;
    if (deadline.next) deadline.next.previous = deadline.previous;
    else this.#tail = deadline.previous;
    deadline.previous = deadline.next = undefined;
  }

  #arm(now: number): void {
    if (this.#timer !== undefined) this.#time.clearTimeout(this.#timer);
    const head = this.#head!;
    this.#timerDueAt = head.dueAt;
    this.#timer = this.#time.setTimeout(this.#fire, Math.max(0, Math.ceil(head.dueAt - now)));
  }

  #clearTimer(): void {
    this.#time.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDueAt = Infinity;
  }

  readonly #clearIfIdle = (): void => {
    this.#clearScheduled = false;
    if (this.#head === undefined && this.#timer !== undefined) this.#clearTimer();
  };

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#timerDueAt = Infinity;
    const now = this.#time.monotonic();
    // expire() runs user abort listeners, which may add or remove deadlines: re-read the head each time.
    for (let head = this.#head; head !== undefined && head.dueAt <= now; head = this.#head) {
      this.#unlink(head);
      head.expire();
    }
    // A system timer can fire a little before performance.now() reaches its due time.
    if (this.#head !== undefined && this.#timer === undefined) this.#arm(now);
  };
}
