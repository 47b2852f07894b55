import { delay, type TimeProvider } from '../pipeline/time.ts';
import type { LockStore } from '../strategies/lock/store.ts';
import type { JobLogger } from './job.ts';

export interface StoreClockOptions {
  /** Offsets larger than this (either way) are logged as a warning. Defaults to 1 s. */
  warnThresholdMs?: number;
  /** Samples per sync; the one with the shortest round trip wins (as NTP does). Defaults to 3. */
  samples?: number;
  logger?: JobLogger;
}

/** The store's clock estimated as `local + offsetMs`, good to within `uncertaintyMs`. */
export interface ClockOffset {
  readonly offsetMs: number;
  /** Half the round trip of the sample the offset came from. */
  readonly uncertaintyMs: number;
}

const maxConfirmations = 50;

/**
 * This instance's view of the store's clock (Redis `TIME`, PostgreSQL `now()`), which judges every
 * occurrence: instances may disagree by seconds, the store is the one clock they share.
 *
 * The offset is learnt by sampling `store.now()` and crediting half the round trip to each leg.
 * A custom store without `now()` makes the local clock the reference.
 */
export class StoreClock {
  #syncing: Promise<ClockOffset> | undefined;
  readonly #store: LockStore;
  readonly #time: TimeProvider;
  readonly #warnThresholdMs: number;
  readonly #samples: number;
  readonly #logger: JobLogger | undefined;
  #offset: ClockOffset | undefined;

  constructor(store: LockStore, time: TimeProvider, options: StoreClockOptions = {}) {
    this.#store = store;
    this.#time = time;
    this.#warnThresholdMs = options.warnThresholdMs ?? 1_000;
    this.#samples = options.samples ?? 3;
    this.#logger = options.logger;
    if (typeof store.now !== 'function') this.#offset = { offsetMs: 0, uncertaintyMs: 0 };
  }

  /** True when the store has a clock of its own to learn. */
  get hasStoreClock(): boolean {
    return typeof this.#store.now === 'function';
  }

  /** The last learnt offset, or `undefined` before the first successful sync. */
  get offset(): ClockOffset | undefined {
    return this.#offset;
  }

  /** The store's clock as this instance estimates it, epoch ms. */
  now(): number {
    return this.#time.now() + (this.#offset?.offsetMs ?? 0);
  }

  /**
   * Samples the store's clock and keeps the best estimate of the offset. Throws what the store
   * throws (the previous offset stays in use).
   */
  sync(): Promise<ClockOffset> {
    // Fires that all find the estimate off at once share one sampling.
    this.#syncing ??= this.#sync().finally(() => {
      this.#syncing = undefined;
    });
    return this.#syncing;
  }

  async #sync(): Promise<ClockOffset> {
    if (!this.hasStoreClock) return this.#offset!;
    let best: ClockOffset | undefined;
    for (let index = 0; index < this.#samples; index++) {
      const sample = await this.#sample();
      if (best === undefined || sample.uncertaintyMs < best.uncertaintyMs) {
        best = { offsetMs: sample.offsetMs, uncertaintyMs: sample.uncertaintyMs };
      }
    }
    const previous = this.#offset;
    this.#offset = best!;
    this.#report(best!, previous);
    return best!;
  }

  /**
   * Resolves once the store's clock has reached `instant`, so that an instance whose clock runs
   * ahead never starts an occurrence early: waits out the difference the learnt offset predicts
   * (no polling), then confirms with one `store.now()` call, which also catches a clock step since
   * the last sync. Rejects with `signal.reason` on abort, or with the store's error.
   */
  async waitUntil(instant: number, signal?: AbortSignal): Promise<void> {
    const offset = this.#offset;
    if (offset !== undefined) {
      const ahead = instant - (this.#time.now() + offset.offsetMs) + offset.uncertaintyMs;
      if (ahead > 0) await delay(this.#time, ahead, signal);
      if (!this.hasStoreClock) return;
    }
    for (let confirmation = 0; confirmation < maxConfirmations; confirmation++) {
      signal?.throwIfAborted();
      const sample = await this.#sample();
      this.#learn(sample);
      if (sample.storeNow >= instant) return;
      await delay(this.#time, Math.max(1, instant - sample.storeNow), signal);
    }
    throw new Error(
      `The store's clock did not reach ${new Date(instant).toISOString()} after ${maxConfirmations} checks.`,
    );
  }

  /** Keeps the sharper of two agreeing estimates; a sample that disagrees means the clock stepped. */
  #learn(sample: ClockOffset): void {
    const current = this.#offset;
    const stepped =
      current !== undefined &&
      Math.abs(sample.offsetMs - current.offsetMs) > sample.uncertaintyMs + current.uncertaintyMs + 1;
    if (current === undefined || stepped || sample.uncertaintyMs < current.uncertaintyMs) {
      this.#offset = { offsetMs: sample.offsetMs, uncertaintyMs: sample.uncertaintyMs };
    }
  }

  async #sample(): Promise<ClockOffset & { storeNow: number }> {
    const sentAt = this.#time.monotonic();
    const localAt = this.#time.now();
    const storeNow = await this.#store.now!();
    const roundTrip = this.#time.monotonic() - sentAt;
    return { offsetMs: storeNow - (localAt + roundTrip / 2), uncertaintyMs: roundTrip / 2, storeNow };
  }

  #report(offset: ClockOffset, previous: ClockOffset | undefined): void {
    const logger = this.#logger;
    if (logger === undefined) return;
    const fields = {
      offsetMs: Math.round(offset.offsetMs * 10) / 10,
      uncertaintyMs: Math.round(offset.uncertaintyMs * 10) / 10,
    };
    if (Math.abs(offset.offsetMs) > this.#warnThresholdMs) {
      logger.warn(
        { ...fields, thresholdMs: this.#warnThresholdMs },
        `This machine's clock is ${Math.abs(Math.round(offset.offsetMs))} ms ${offset.offsetMs < 0 ? 'ahead of' : 'behind'} the store's clock: occurrences are timed by the store's clock, fix the machine's time sync`,
      );
    } else if (previous === undefined) {
      logger.info(fields, "store clock offset learnt (store's clock = local clock + offsetMs)");
    } else {
      logger.debug(fields, 'store clock offset refreshed');
    }
  }
}
