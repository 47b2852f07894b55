import { hasJobPauses, hasRunLedger, type JobPause, type RunRecord } from '../../ledger/contract.ts';
import { ledgerKeyOf, type ResolvedConfig, type ResolvedJob } from '../../scheduler/job.ts';
import { JobSchedules } from '../../scheduler/occurrence.ts';
import { formatRelative, formatTable, formatTimeIn, localTimezone, type Styles } from '../output.ts';
import type { CommandHelpers } from '../program.ts';
import { inMemoryStoreNote, readStore } from './store-error.ts';

/** One job as `resil jobs list --json` prints it. */
export interface JobListEntry {
  name: string;
  schedule: string;
  /** The job's timezone, else the config's, else this machine's. */
  timezone: string;
  enabled: boolean;
  /** ISO 8601 in UTC (`2026-12-01T02:00:00.000Z`); null for a disabled job or a schedule with no future occurrence. */
  nextRun: string | null;
  /** null for `lock: false`. */
  lockKey: string | null;
  /**
   * The latest occurrence that ran to an end (success or failure) among the job's last few in the
   * store's run ledger; null when none or the store keeps no ledger.
   */
  lastRun: {
    scheduledAt: string;
    outcome: RunRecord['outcome'];
    startedAt: string | null;
    endedAt: string | null;
    instance: string | null;
    token: number | null;
    error?: string;
  } | null;
  /** Paused fleet-wide (`resil jobs pause`); false when the store keeps no pauses or cannot be read. */
  paused: boolean;
  /** Who paused it, when (ISO 8601, store clock) and why; null unless paused. */
  pause: { by: string; pausedAt: string; reason: string | null } | null;
}

/** What the store says of one job: its last run and its pause. */
interface LedgerView {
  lastRun: RunRecord | undefined;
  pause: JobPause | undefined;
}

/** How many of a job's latest records `jobs list` looks through for its last run. */
const lastRunSearch = 10;

function isoOrNull(epochMs: number | undefined): string | null {
  return epochMs === undefined ? null : new Date(epochMs).toISOString();
}

function nextRunOf(job: ResolvedJob, now: Date, schedules: JobSchedules): Date | null {
  if (!job.enabled) return null;
  const next = schedules.of(job).nextAfter(now.getTime());
  return next === undefined ? null : new Date(next);
}

/**
 * Each job's latest run and pause; `undefined` when the store keeps no ledger, or with the reason
 * it could not be read within 5 s.
 */
async function ledgerViews(
  config: ResolvedConfig,
): Promise<{ views: Map<string, LedgerView> | undefined; error?: string }> {
  const store = config.store;
  if (!hasRunLedger(store)) return { views: undefined };
  const pauses = hasJobPauses(store) ? store : undefined;
  const read = await readStore(store, () =>
    Promise.all(
      config.jobs.map(async (job): Promise<readonly [string, LedgerView]> => {
        const key = ledgerKeyOf(job);
        const [history, pause] = await Promise.all([
          store.runHistory(job.name, { key, limit: lastRunSearch }),
          pauses?.pauseOf(job.name, { key }),
        ]);
        const lastRun = history.find(
          (record) => record.outcome === 'success' || record.outcome === 'failure',
        );
        return [job.name, { lastRun, pause }];
      }),
    ),
  );
  return read.ok ? { views: new Map(read.value) } : { views: undefined, error: read.reason };
}

/** What `jobs list --json` prints, and whether (and why not) the store's run ledger was read. */
export interface JobListing {
  entries: JobListEntry[];
  /** True when the store keeps a run ledger and it answered: `lastRun`, `paused` are the store's. */
  withLedger: boolean;
  /** Why the ledger could not be read (no credentials in it); the entries then have no last run or pause. */
  ledgerError?: string;
}

/**
 * Each job of the config as `resil jobs list --json` shows it (next run after `now`, last run and
 * pause from the store's run ledger). Never throws for an unreachable store: see `ledgerError`.
 */
export async function readJobListing(config: ResolvedConfig, now = new Date()): Promise<JobListing> {
  const { views, error } = await ledgerViews(config);
  const schedules = new JobSchedules();
  const entries = config.jobs.map((job) => toEntry(job, now, views?.get(job.name), schedules));
  return { entries, withLedger: views !== undefined, ...(error === undefined ? {} : { ledgerError: error }) };
}

function toEntry(
  job: ResolvedJob,
  now: Date,
  view: LedgerView | undefined,
  schedules: JobSchedules,
): JobListEntry {
  const nextRun = nextRunOf(job, now, schedules);
  const { lastRun, pause } = view ?? { lastRun: undefined, pause: undefined };
  return {
    name: job.name,
    schedule: job.schedule,
    timezone: job.timezone ?? localTimezone(),
    enabled: job.enabled,
    nextRun: nextRun === null ? null : nextRun.toISOString(),
    lockKey: job.lock === false ? null : job.lock.key,
    lastRun:
      lastRun === undefined
        ? null
        : {
            scheduledAt: new Date(lastRun.scheduledAt).toISOString(),
            outcome: lastRun.outcome,
            startedAt: isoOrNull(lastRun.startedAt),
            endedAt: isoOrNull(lastRun.endedAt),
            instance: lastRun.instance ?? null,
            token: lastRun.token ?? null,
            ...(lastRun.error === undefined ? {} : { error: lastRun.error }),
          },
    paused: pause !== undefined,
    pause:
      pause === undefined
        ? null
        : { by: pause.by, pausedAt: new Date(pause.pausedAt).toISOString(), reason: pause.reason ?? null },
  };
}

function formatEntries(
  entries: readonly JobListEntry[],
  withLedger: boolean,
  now: number,
  styles: Styles,
): string {
  // Only while some job is paused, as jobs history shows TAKEOVERS only when there are some.
  const withPauses = entries.some((entry) => entry.paused);
  const header = ['NAME', 'SCHEDULE', 'TIMEZONE', 'NEXT RUN', 'LOCK KEY'];
  if (withLedger) header.push('LAST RUN');
  if (withPauses) header.push('PAUSED');
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
    return row;
  });
  return `${formatTable(header.map(styles.dim), rows)}\n`;
}

/** `resil jobs list [--json]`. */
export async function listJobs(helpers: CommandHelpers, options: { json: boolean }): Promise<void> {
  const config = await helpers.loadConfig();
  const now = new Date();
  const { entries, withLedger, ledgerError } = await readJobListing(config, now);
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
