import { systemTimeProvider, type TimeProvider, type TimerHandle } from '../../pipeline/time.ts';

/** What the last probe found. */
export interface StoreProbeState {
  /** True while the store answered the last probe within the timeout. */
  readonly up: boolean;
  /** Why it is not up: one line, no secrets. `undefined` while up. */
  readonly reason: string | undefined;
  /** Since when `up` holds, epoch ms (this instance's clock). */
  readonly since: number;
  /** The last answer within the timeout, epoch ms, and its round trip. */
  readonly lastAnswerAt: number | undefined;
  readonly roundTripMs: number | undefined;
}

export interface StoreProbeOptions {
  /** Defaults to the system clock. */
  time?: TimeProvider;
  /** Pause between the end of one probe and the next, ms. Defaults to 1 s. */
  intervalMs?: number;
  /** A probe not answered within this is a failure, ms. Defaults to 1 s. */
  timeoutMs?: number;
  /** The reason shown for a failed probe. Defaults to the error's message. */
  describeError?: (error: unknown) => string;
  /** Told each probe's outcome (also when unchanged). */
  onResult?: (state: StoreProbeState) => void;
}

export const storeProbeDefaults = { intervalMs: 1_000, timeoutMs: 1_000 } as const;

/**
 * Asks the store a cheap question (its clock: Redis `TIME`, PostgreSQL `now()`) every
 * `intervalMs`, each bounded by `timeoutMs`, so readiness follows an outage within about
 * `intervalMs + timeoutMs` and a recovery within `intervalMs` of the store answering again. One
 * call at a time: a call still unanswered is not sent again, and counts as failing until it settles.
 *
 * @example
 * const probe = new StoreProbe(() => store.now(), { onResult: (state) => gauge.set(state.up ? 1 : 0) });
 * probe.start();
 */
export class StoreProbe {
  readonly #read: () => unknown;
  readonly #time: TimeProvider;
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  readonly #describeError: (error: unknown) => string;
  readonly #onResult: ((state: StoreProbeState) => void) | undefined;
  #state: StoreProbeState;
  #timer: TimerHandle | undefined;
  #inFlight = false;
  #running = false;

  constructor(read: () => unknown, options: StoreProbeOptions = {}) {
    this.#read = read;
    this.#time = options.time ?? systemTimeProvider;
    this.#intervalMs = options.intervalMs ?? storeProbeDefaults.intervalMs;
    this.#timeoutMs = options.timeoutMs ?? storeProbeDefaults.timeoutMs;
    this.#describeError =
      options.describeError ?? ((error) => (error instanceof Error ? error.message : String(error)));
    this.#onResult = options.onResult;
    this.#state = {
      up: false,
      reason: 'no answer from the store yet',
      since: this.#time.now(),
      lastAnswerAt: undefined,
      roundTripMs: undefined,
    };
  }

  get state(): StoreProbeState {
    return this.#state;
  }

  /** Probes now, then `intervalMs` after each probe ends, until `stop()`. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#probe();
  }

  stop(): void {
    this.#running = false;
    if (this.#timer !== undefined) this.#time.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #probe(): void {
    this.#timer = undefined;
    if (!this.#running) return;
    if (this.#inFlight) {
      this.#settle(
        false,
        new Error(`the store has not answered a probe sent over ${this.#timeoutMs} ms ago`),
      );
      return;
    }
    this.#inFlight = true;
    const sentAt = this.#time.monotonic();
    let done = false;
    const deadline = this.#time.setTimeout(() => {
      if (done) return;
      done = true;
      this.#settle(false, new Error(`the store did not answer within ${this.#timeoutMs} ms`));
    }, this.#timeoutMs);
    // Through then(): a store that throws instead of rejecting is a failing store, not a crash.
    Promise.resolve()
      .then(this.#read)
      .then(
        () => {
          if (done) return;
          done = true;
          this.#time.clearTimeout(deadline);
          this.#settle(true, undefined, this.#time.monotonic() - sentAt);
        },
        (error: unknown) => {
          if (done) return;
          done = true;
          this.#time.clearTimeout(deadline);
          this.#settle(false, error);
        },
      )
      .finally(() => {
        this.#inFlight = false;
      });
  }

  #settle(up: boolean, error: unknown, roundTripMs?: number): void {
    const now = this.#time.now();
    const previous = this.#state;
    let reason: string | undefined;
    if (!up) {
      try {
        reason = this.#describeError(error);
      } catch {
        reason = 'the store failed (its error could not be described)';
      }
    }
    this.#state = {
      up,
      reason,
      since: previous.up === up ? previous.since : now,
      lastAnswerAt: up ? now : previous.lastAnswerAt,
      roundTripMs: up ? roundTripMs : previous.roundTripMs,
    };
    try {
      this.#onResult?.(this.#state);
    } catch {
      // A subscriber's bug does not stop the probe.
    }
    if (this.#running) this.#timer = this.#time.setTimeout(() => this.#probe(), this.#intervalMs);
  }
}
