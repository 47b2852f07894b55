import { hasRunLedger, type RunRecord } from '../../ledger/contract.ts';
import { ledgerKeyOf } from '../../scheduler/job.ts';
import { formatSpan, formatTable, formatTimeIn, localTimezone, type Styles } from '../output.ts';
import type { CommandHelpers } from '../program.ts';
import { jobNamed } from './jobs-next.ts';
import { inMemoryStoreNote, readStore, storeFailure } from './store-error.ts';

/** Longer errors are cut in the table (`--json` has them whole, as the ledger keeps them). */
const tableErrorLength = 80;

/** One occurrence as `resil jobs history --json` prints it. Instants are ISO 8601 in UTC. */
export interface JobHistoryEntry {
  /** The instant the schedule named (for `resil jobs run`, when the run was asked for). */
  scheduledAt: string;
  outcome: RunRecord['outcome'];
  /** Why it was skipped (`overlap`, `missed`); null unless `skipped`. */
  reason: NonNullable<RunRecord['reason']> | null;
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

function isoOrNull(epochMs: number | undefined): string | null {
  return epochMs === undefined ? null : new Date(epochMs).toISOString();
}

/** A run ledger record as `jobs history --json` prints it. */
export function historyEntryOf(record: RunRecord): JobHistoryEntry {
  const { startedAt, endedAt } = record;
  return {
    scheduledAt: new Date(record.scheduledAt).toISOString(),
    outcome: record.outcome,
    reason: record.reason ?? null,
    instance: record.instance ?? null,
    token: record.token ?? null,
    startedAt: isoOrNull(startedAt),
    endedAt: isoOrNull(endedAt),
    durationMs: startedAt === undefined || endedAt === undefined ? null : endedAt - startedAt,
    takeovers: record.takeovers ?? 0,
    error: record.error ?? null,
  };
}

/** The run ledger keeps a job's occurrences under its lock key, or under its name for `lock: false`. */
/** `250ms`, `1.2s`, then `3m 2s`: a run's duration, where a second is coarse. */
function formatElapsed(ms: number): string {
  if (ms < 1_000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  return formatSpan(ms);
}

function shortError(error: string): string {
  const line = error.split('\n')[0] ?? error;
  return line.length <= tableErrorLength ? line : `${line.slice(0, tableErrorLength - 1)}…`;
}

function formatOutcome(entry: JobHistoryEntry, styles: Styles): string {
  switch (entry.outcome) {
    case 'success':
      return styles.green('success');
    case 'failure':
      return styles.red('failure');
    case 'skipped':
      return styles.yellow(entry.reason === null ? 'skipped' : `skipped (${entry.reason})`);
    case 'running':
      return styles.cyan('running');
    default:
      return styles.dim(entry.outcome);
  }
}

function formatEntries(entries: readonly JobHistoryEntry[], timezone: string, styles: Styles): string {
  const none = styles.dim('-');
  const withTakeovers = entries.some((entry) => entry.takeovers > 0);
  const header = [`OCCURRENCE (${timezone})`, 'OUTCOME', 'INSTANCE', 'TOKEN', 'STARTED', 'DURATION'];
  if (withTakeovers) header.push('TAKEOVERS');
  header.push('ERROR');
  const rows = entries.map((entry) => {
    const row = [
      formatTimeIn(new Date(entry.scheduledAt), timezone),
      formatOutcome(entry, styles),
      entry.instance ?? none,
      entry.token === null ? none : String(entry.token),
      entry.startedAt === null ? none : formatTimeIn(new Date(entry.startedAt), timezone),
      entry.durationMs === null ? none : formatElapsed(entry.durationMs),
    ];
    if (withTakeovers) row.push(entry.takeovers > 0 ? String(entry.takeovers) : '');
    row.push(entry.error === null ? '' : styles.red(shortError(entry.error)));
    return row;
  });
  return `${formatTable(header.map(styles.dim), rows)}\n`;
}

/**
 * `resil jobs history <name> [--limit N] [--json]`: the job's latest occurrences in the run
 * ledger, newest first. Exit 0 (also for an empty history, or a store that keeps no ledger), 1 when
 * the store cannot be read within 5 s, 2 for an unknown job.
 */
export async function showJobHistory(
  helpers: CommandHelpers,
  name: string,
  options: { limit: number; json: boolean },
): Promise<void> {
  const config = await helpers.loadConfig();
  const job = jobNamed(config, name);
  const { store } = config;
  const { errorStyles } = helpers;
  let records: RunRecord[] = [];
  if (hasRunLedger(store)) {
    const read = await readStore(store, () =>
      store.runHistory(job.name, { key: ledgerKeyOf(job), limit: options.limit }),
    );
    if (!read.ok) {
      helpers.stderr.write(`${errorStyles.red('error:')} ${storeFailure(read)}\n`);
      helpers.setExitCode(1);
      return;
    }
    records = read.value;
  }
  const entries = records.map(historyEntryOf);
  if (options.json) {
    helpers.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
    return;
  }
  if (!hasRunLedger(store)) {
    helpers.stderr.write(
      errorStyles.dim(
        "note: the config's store keeps no run ledger (it is a LockStore without runHistory()): there is no history to show; RedisLockStore and PostgresLockStore keep one\n",
      ),
    );
    return;
  }
  if (entries.length > 0) {
    helpers.stdout.write(formatEntries(entries, job.timezone ?? localTimezone(), helpers.styles));
  } else {
    // Its fires take no fencing token, so the scheduler records none of them.
    const why = job.lock === false ? ": a lock: false job's runs are not recorded in it" : '';
    helpers.stdout.write(`No runs of ${name} in the run ledger${why}.\n`);
  }
  const note = inMemoryStoreNote(store);
  if (note !== undefined) helpers.stderr.write(errorStyles.dim(note));
}
