import type { CommandHelpers } from '../command-helpers.ts';
import { formatTable, type Styles } from '../output.ts';
import { formatRelative, formatTimeIn } from '../time-format.ts';
import { type JobListEntry, readJobListing } from '../views/jobs.ts';
import { inMemoryStoreNote } from '../views/store-read.ts';

function formatEntries(
  entries: readonly JobListEntry[],
  withLedger: boolean,
  now: number,
  styles: Styles,
): string {
  // Only while some job is paused, as jobs history shows TAKEOVERS only when there are some.
  const withPauses = entries.some((entry) => entry.paused);
  const withDrift = entries.some((entry) => entry.drift !== null);
  // Only while some job runs more than one occurrence at once.
  const withConcurrency = entries.some((entry) => entry.concurrency !== undefined);
  const header = ['NAME', 'SCHEDULE', 'TIMEZONE', 'NEXT RUN', 'LOCK KEY'];
  if (withConcurrency) header.push('CONCURRENCY');
  if (withLedger) header.push('LAST RUN');
  if (withPauses) header.push('PAUSED');
  if (withDrift) header.push('DRIFT');
  const rows = entries.map((entry) => {
    const next =
      entry.nextRun === null
        ? styles.dim(entry.enabled ? 'never' : 'disabled')
        : // In the job's own zone, labelled: it sits next to the TIMEZONE column, not the machine's.
          `${formatTimeIn(new Date(entry.nextRun), entry.timezone)} ${styles.dim(`(${formatRelative(new Date(entry.nextRun), now)})`)}`;
    const row = [
      styles.bold(entry.name),
      entry.schedule,
      entry.timezone,
      next,
      entry.lockKey ?? styles.dim('none'),
    ];
    if (withConcurrency) row.push(String(entry.concurrency ?? 1));
    if (withLedger) {
      const last = entry.lastRun;
      row.push(
        last === null
          ? styles.dim('never')
          : `${last.outcome === 'success' ? styles.green('success') : styles.red('failure')} ${formatRelative(new Date(last.endedAt ?? last.scheduledAt), now)}`,
      );
    }
    if (withPauses) {
      row.push(entry.pause === null ? styles.dim('no') : `${styles.yellow('paused')} by ${entry.pause.by}`);
    }
    if (withDrift)
      row.push(entry.drift === null ? styles.dim('no') : styles.yellow(describeDrift(entry.drift)));
    return row;
  });
  return `${formatTable(header.map(styles.dim), rows)}\n`;
}

/** `2 definitions: schedule, timeoutMs` (the fields that differ, once all variants are known). */
function describeDrift(drift: NonNullable<JobListEntry['drift']>): string {
  const fields = drift[0]?.fields;
  const differing = fields === null || fields === undefined ? '' : `: ${Object.keys(fields).join(', ')}`;
  return `${drift.length} definitions${differing}`;
}

/** `resil jobs list [--json]`. */
export async function listJobs(helpers: CommandHelpers, options: { json: boolean }): Promise<void> {
  const config = await helpers.loadConfig();
  const now = new Date();
  const { entries, withLedger, ledgerError, driftError } = await readJobListing(config, now);
  if (driftError !== undefined) {
    helpers.stderr.write(
      `${helpers.errorStyles.yellow('warning:')} cannot read the instance registry, config drift not shown: ${driftError}\n`,
    );
  }
  if (ledgerError !== undefined) {
    helpers.stderr.write(
      `${helpers.errorStyles.yellow('warning:')} cannot read the run ledger, last runs not shown: ${ledgerError}\n`,
    );
  }
  if (options.json) {
    helpers.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
  } else if (entries.length === 0) {
    helpers.stdout.write(`No jobs in ${config.filepath}.\n`);
  } else {
    helpers.stdout.write(formatEntries(entries, withLedger, now.getTime(), helpers.styles));
    const note = inMemoryStoreNote(config.store);
    if (note !== undefined) helpers.stderr.write(helpers.errorStyles.dim(note));
  }
}
