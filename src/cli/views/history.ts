import type { RunRecord, RunTrigger } from '../../ledger/contract.ts';

/** An instant of the store as ISO 8601, or null when it is not known. */
export function isoOrNull(epochMs: number | undefined): string | null {
  return epochMs === undefined ? null : new Date(epochMs).toISOString();
}

/** One occurrence as `resil jobs history --json` prints it. Instants are ISO 8601 in UTC. */
export interface JobHistoryEntry {
  /** The instant the schedule named (for `resil jobs run`, when the run was asked for). */
  scheduledAt: string;
  outcome: RunRecord['outcome'];
  /**
   * For `skipped`: why (`overlap`, `missed`, `paused`). Otherwise, for a manual or backfill run,
   * the reason its starter gave (`--reason`); null when none.
   */
  reason: string | null;
  /** How it started; `schedule` for a record written before runs recorded it. */
  trigger: RunTrigger;
  /** Who started a manual or backfill run (`user@host`, or the dashboard's actor); null otherwise. */
  actor: string | null;
  instance: string | null;
  /** The fencing token of its latest claim; null for an occurrence that never ran. */
  token: number | null;
  /** Store clock. */
  startedAt: string | null;
  /** Store clock; null while it is queued or running. */
  endedAt: string | null;
  /** `endedAt - startedAt`; null unless both are known. */
  durationMs: number | null;
  /** How many times another instance took it over after its holder stopped renewing. */
  takeovers: number;
  /** The ledger's short message for a failure (never secrets); null otherwise. */
  error: string | null;
}

/** A run ledger record as `jobs history --json` prints it. */
export function historyEntryOf(record: RunRecord): JobHistoryEntry {
  const { startedAt, endedAt } = record;
  return {
    scheduledAt: new Date(record.scheduledAt).toISOString(),
    outcome: record.outcome,
    reason: (record.outcome === 'skipped' ? record.reason : record.triggerReason) ?? null,
    trigger: record.trigger ?? 'schedule',
    actor: record.actor ?? null,
    instance: record.instance ?? null,
    token: record.token ?? null,
    startedAt: isoOrNull(startedAt),
    endedAt: isoOrNull(endedAt),
    durationMs: startedAt === undefined || endedAt === undefined ? null : endedAt - startedAt,
    takeovers: record.takeovers ?? 0,
    error: record.error ?? null,
  };
}
