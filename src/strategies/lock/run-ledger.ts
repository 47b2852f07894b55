/** How a scheduled run ended. */
export type RunOutcome = 'success' | 'failure';

/** One finished run of a job's occurrence, as kept in a store's run ledger. */
export interface RunRecord {
  /** The job's name. */
  readonly job: string;
  /** The occurrence: the instant the schedule named, epoch ms (identical on every instance). */
  readonly scheduledAt: number;
  readonly outcome: RunOutcome;
  /** The fencing token the run held. */
  readonly token: number;
  /** Which instance ran it (host:pid or a name the user gave). */
  readonly instance: string;
  /** Epoch ms. */
  readonly startedAt: number;
  /** Epoch ms. */
  readonly endedAt: number;
  /** A short error message for a failure. Never contains secrets. */
  readonly error?: string;
}

/**
 * Per-job memory of completed occurrences, so a fleet runs each `(job, scheduledAt)` once.
 * Stores that ship (memory, Redis, PostgreSQL) implement it; a custom store may too.
 *
 * Writes carry the run's fencing token and are refused with `StaleTokenError` when a higher
 * token has been recorded for the job, so a paused ex-holder cannot corrupt the ledger.
 */
export interface RunLedger {
  /** True when `(job, scheduledAt)` was recorded as a success and is still within retention. */
  isCompleted(job: string, scheduledAt: number): Promise<boolean>;
  /**
   * Appends `record` to the job's history (trimmed to `historyLimit`, default 20) and, for a
   * success, adds its occurrence to the completed set, dropping occurrences older than
   * `retentionMs` (default 7 days) by the store's clock. Throws `StaleTokenError` when
   * `record.token` is lower than the highest token recorded for the job.
   */
  recordRun(record: RunRecord, options?: { retentionMs?: number; historyLimit?: number }): Promise<void>;
  /** The job's latest runs, newest first (at most `limit`, default 20). */
  runHistory(job: string, limit?: number): Promise<RunRecord[]>;
  /** The latest completed occurrence (epoch ms) within retention, or `undefined`. */
  lastCompleted(job: string): Promise<number | undefined>;
}

/** True when `store` implements {@link RunLedger}. */
export function hasRunLedger<S extends object>(store: S): store is S & RunLedger {
  const candidate = store as Partial<RunLedger>;
  return (
    typeof candidate.isCompleted === 'function' &&
    typeof candidate.recordRun === 'function' &&
    typeof candidate.runHistory === 'function' &&
    typeof candidate.lastCompleted === 'function'
  );
}
