import { hasRunLedger, type RunRecord } from '../../ledger/contract.ts';
import { firstLine } from '../../scheduler/credentials.ts';
import { ledgerKeyOf } from '../../scheduler/job.ts';
import type { CommandHelpers } from '../command-helpers.ts';
import { formatTable, type Styles } from '../output.ts';
import { formatElapsed, formatTimeIn, localTimezone } from '../time-format.ts';
import { historyEntryOf, type JobHistoryEntry } from '../views/history.ts';
import { jobNamed } from '../views/jobs.ts';
import { inMemoryStoreNote, readStore, storeFailure } from '../views/store-read.ts';

/** Longer errors are cut in the table (`--json` has them whole, as the ledger keeps them). */
const tableErrorLength = 80;

function shortError(error: string): string {
  const line = firstLine(error);
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

/** `schedule`, `manual by ops@host-1: "rerun after fix"`, `backfill by ops@host-1`. */
function formatTrigger(entry: JobHistoryEntry): string {
  const by = entry.actor === null ? '' : ` by ${entry.actor}`;
  const why = entry.outcome === 'skipped' || entry.reason === null ? '' : `: ${JSON.stringify(entry.reason)}`;
  return `${entry.trigger}${by}${why}`;
}

function formatEntries(entries: readonly JobHistoryEntry[], timezone: string, styles: Styles): string {
  const none = styles.dim('-');
  const withTakeovers = entries.some((entry) => entry.takeovers > 0);
  // Only when some run did not come from the schedule: how each started, by whom and why.
  const withTriggers = entries.some((entry) => entry.trigger !== 'schedule');
  const header = [`OCCURRENCE (${timezone})`, 'OUTCOME', 'INSTANCE', 'TOKEN', 'STARTED', 'DURATION'];
  if (withTakeovers) header.push('TAKEOVERS');
  if (withTriggers) header.push('TRIGGER');
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
    if (withTriggers) row.push(formatTrigger(entry));
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
