import type { RunLedger } from '../../ledger/contract.ts';
import {
  systemTimeProvider,
  type TimeProvider,
  type TimerHandle,
  withDeadline,
} from '../../pipeline/time.ts';
import { ledgerKeyOf, type ResolvedJob } from '../../scheduler/job.ts';

export interface LastSuccessOptions {
  /** The store's run ledger; without one, only this instance's own successes are known. */
  ledger: Pick<RunLedger, 'lastCompleted'> | undefined;
  jobs: readonly Pick<ResolvedJob, 'name' | 'lock'>[];
  /** Told each job's latest success (epoch ms; `undefined`: none within the ledger's retention). */
  set(job: string, epochMs: number | undefined): void;
  /** Told a read that failed; the last value stays. */
  onError?(job: string, error: unknown): void;
  /** Defaults to the system clock. */
  time?: TimeProvider;
  /** Every job is read again this long after the previous round was sent, ms. Defaults to 30 s. */
  refreshMs?: number;
  /** Reads in flight at once. Defaults to 4. */
  concurrency?: number;
  /** A read not answered within this is given up on (the last value stays), ms. Defaults to 5 s. */
  readTimeoutMs?: number;
}

export const lastSuccessDefaults = { refreshMs: 30_000, concurrency: 4, readTimeoutMs: 5_000 } as const;

/**
 * Keeps `resil_job_last_success_timestamp_seconds` fleet-wide: each job's latest successful
 * occurrence is read from the run ledger (so every instance reports the same value, whichever ran
 * it), for every job every `refreshMs` and for one job after each of its successes here. Reads
 * run in the background, a few at a time: a scrape never waits for the store, and a failing read
 * leaves the last value in place.
 */
export class LastSuccessRefresher {
  readonly #options: LastSuccessOptions;
  readonly #time: TimeProvider;
  readonly #keys = new Map<string, string>();
  readonly #pending = new Set<string>();
  readonly #latest = new Map<string, number>();
  /** Per job, the number of the latest read started: an older read's late answer is dropped. */
  readonly #reads = new Map<string, number>();
  #active = 0;
  #timer: TimerHandle | undefined;
  #running = false;
  #idle: Array<() => void> = [];

  constructor(options: LastSuccessOptions) {
    this.#options = options;
    this.#time = options.time ?? systemTimeProvider;
    for (const job of options.jobs) this.#keys.set(job.name, ledgerKeyOf(job));
  }

  /** Reads every job now, then every `refreshMs`. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    if (this.#options.ledger !== undefined) this.#refreshAll();
  }

  stop(): void {
    this.#running = false;
    this.#pending.clear();
    if (this.#timer !== undefined) this.#time.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** `job` succeeded here, for occurrence `scheduledAt`: read the ledger again (or, without one, take it). */
  succeeded(job: string, scheduledAt: number): void {
    if (!this.#running || !this.#keys.has(job)) return;
    if (this.#options.ledger !== undefined) {
      this.#pending.add(job);
      this.#pump();
      return;
    }
    const latest = this.#latest.get(job);
    if (latest === undefined || scheduledAt > latest) {
      this.#latest.set(job, scheduledAt);
      this.#options.set(job, scheduledAt);
    }
  }

  /** @internal Resolves when no read is queued or in flight (tests). */
  settled(): Promise<void> {
    if (this.#active === 0 && this.#pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #refreshAll(): void {
    this.#timer = undefined;
    if (!this.#running) return;
    // A round still going on when the next one is due merges into it (the set keeps each job once).
    for (const job of this.#keys.keys()) this.#pending.add(job);
    this.#pump();
    this.#timer = this.#time.setTimeout(
      () => this.#refreshAll(),
      this.#options.refreshMs ?? lastSuccessDefaults.refreshMs,
    );
  }

  #pump(): void {
    const concurrency = this.#options.concurrency ?? lastSuccessDefaults.concurrency;
    while (this.#running && this.#active < concurrency && this.#pending.size > 0) {
      const job = this.#pending.values().next().value!;
      this.#pending.delete(job);
      this.#active++;
      void this.#read(job).finally(() => {
        this.#active--;
        this.#pump();
        if (this.#active === 0 && this.#pending.size === 0) {
          for (const resolve of this.#idle.splice(0)) resolve();
        }
      });
    }
  }

  async #read(job: string): Promise<void> {
    const { ledger, set, onError } = this.#options;
    const timeoutMs = this.#options.readTimeoutMs ?? lastSuccessDefaults.readTimeoutMs;
    const number = (this.#reads.get(job) ?? 0) + 1;
    this.#reads.set(job, number);
    try {
      const read = Promise.resolve().then(() => ledger!.lastCompleted(job, { key: this.#keys.get(job)! }));
      const latest = await withDeadline(read, timeoutMs, () => {
        throw new Error(`the run ledger did not answer within ${timeoutMs} ms`);
      });
      // Stopped, or a newer read of this job started meanwhile (its answer is the fresher one).
      if (!this.#running || this.#reads.get(job) !== number) return;
      if (latest === undefined) this.#latest.delete(job);
      else this.#latest.set(job, latest);
      set(job, latest);
    } catch (error) {
      try {
        onError?.(job, error);
      } catch {
        // A logger's failure is not the refresh's.
      }
    }
  }
}
