import pino from 'pino';
import { hasRunLedger, type RunRecord } from '../../ledger/contract.ts';
import { isDone } from '../../ledger/decide.ts';
import { describeError } from '../../scheduler/credentials.ts';
import { offsetAt } from '../../scheduler/dst.ts';
import type { FireResult } from '../../scheduler/fire.ts';
import { ledgerKeyOf, type ResolvedJob } from '../../scheduler/job.ts';
import { JobSchedule } from '../../scheduler/occurrence.ts';
import type { CommandHelpers } from '../command-helpers.ts';
import { faultExitCode } from '../job-faults.ts';
import { createLogger } from '../logger.ts';
import { formatTable } from '../output.ts';
import { abortSettleMs, actorName, superviseRun } from '../run-supervision.ts';
import { signalExitCodes } from '../stop-signals.ts';
import { formatTimeIn, localTimezone } from '../time-format.ts';
import { resolveLogLevel, UsageError } from '../usage-error.ts';
import { jobNamed } from '../views/jobs.ts';
import { inMemoryStoreNote, readStore, storeFailure } from '../views/store-read.ts';

/** `resil jobs backfill` exit codes (CONTRACT.md). */
const backfillExitCodes = { done: 0, failed: 1, usage: 2 } as const;

/** The most records read to find the range's (a job keeps 100 by default). */
const maxRecordsRead = 10_000;

/** What a backfill does with an occurrence: runs it, or leaves it (it ran, runs or waits). */
export type BackfillAction = 'run' | 'already-done';

export interface BackfillOptions {
  readonly from: string;
  readonly to: string;
  readonly dryRun: boolean;
  readonly json: boolean;
  readonly max: number;
  readonly reason?: string;
}

/**
 * An instant of the command line as epoch ms: with a zone (`Z`, `+01:00`) as it says, without one
 * as a wall time in `timezone` (a date alone is its midnight there).
 */
export function instantOf(value: string, option: string, timezone: string): number {
  const zoned = /(Z|[+-]\d{2}:\d{2})$/.test(value);
  const wall = Date.parse(zoned ? value : `${value.length === 10 ? `${value}T00:00` : value}Z`);
  if (Number.isNaN(wall)) throw new UsageError(`${option} ${JSON.stringify(value)} is not a valid instant`);
  if (zoned) return wall;
  // The offset at the wall time read as UTC, then at the instant that gives: exact but for the
  // hour a DST change skips or repeats.
  const first = wall - offsetAt(wall, timezone);
  return wall - offsetAt(first, timezone);
}

/**
 * `resil jobs backfill <name> --from <instant> --to <instant> [--dry-run] [--json] [--reason]
 * [--max]`: the job's occurrences in `[from, to)`, oldest first, each claimed as a fire would be.
 */
export async function backfill(
  helpers: CommandHelpers,
  name: string,
  options: BackfillOptions,
): Promise<void> {
  const level = resolveLogLevel(undefined);
  const config = await helpers.loadConfig();
  const { errorStyles, stderr, stdout, styles } = helpers;
  const job = jobNamed(config, name);
  const timezone = job.timezone ?? localTimezone();
  const from = instantOf(options.from, '--from', timezone);
  const to = instantOf(options.to, '--to', timezone);
  const now = Date.now();
  if (!(from < to)) throw new UsageError(`--from (${iso(from)}) must be before --to (${iso(to)})`);
  if (to > now)
    throw new UsageError(`--to (${iso(to)}) is in the future: a backfill runs past occurrences only`);
  const keptSince = now - config.ledgerRetentionMs;
  if (from < keptSince) {
    throw new UsageError(
      `--from (${iso(from)}) is older than the run ledger keeps records (${iso(keptSince)}, ledgerRetention): an occurrence of ${name} whose record was dropped could run twice`,
    );
  }
  if (job.lock === false) {
    throw new UsageError(
      `${name} has lock: false: without its lock the run ledger does not keep its occurrences, and a backfill could not run each once`,
    );
  }
  const { store } = config;
  if (!hasRunLedger(store)) {
    throw new UsageError(`${name}: the config's store keeps no run ledger, which a backfill needs`);
  }
  const { instants, more } = new JobSchedule(job).between(from - 1, to, options.max);
  if (more) {
    throw new UsageError(
      `[${iso(from)}, ${iso(to)}) holds more than --max ${options.max} occurrences of ${name}: narrow the range or raise --max`,
    );
  }
  const note = inMemoryStoreNote(store);
  if (note !== undefined && !options.json) stderr.write(errorStyles.dim(note));

  const read = await readStore(store, () =>
    store.runHistory(job.name, { key: ledgerKeyOf(job), limit: maxRecordsRead }),
  );
  if (!read.ok) {
    stderr.write(`${errorStyles.red('error:')} ${storeFailure(read)}\n`);
    helpers.setExitCode(backfillExitCodes.failed);
    return;
  }
  checkRangeKept(job, read.value, from, config.ledgerRecordLimit);
  const records = new Map(read.value.map((record) => [record.scheduledAt, record]));
  const actions = instants.map((at): { scheduledAt: number; action: BackfillAction } => {
    const record = records.get(at);
    return { scheduledAt: at, action: record !== undefined && isDone(record) ? 'already-done' : 'run' };
  });

  if (options.dryRun) {
    if (options.json) {
      const entries = actions.map(({ scheduledAt, action }) => ({ scheduledAt: iso(scheduledAt), action }));
      stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
      return;
    }
    if (actions.length === 0) {
      stdout.write(`${name}: no occurrence in [${iso(from)}, ${iso(to)})\n`);
      return;
    }
    const rows = actions.map(({ scheduledAt, action }) => [
      formatTimeIn(new Date(scheduledAt), timezone),
      iso(scheduledAt),
      action === 'run' ? styles.cyan('run') : styles.dim('already-done'),
    ]);
    const header = [`OCCURRENCE (${timezone})`, 'UTC', 'ACTION'].map(styles.dim);
    stdout.write(`${formatTable(header, rows)}\n`);
    const toRun = actions.filter(({ action }) => action === 'run').length;
    stderr.write(`dry run: ${toRun} of ${actions.length} would run; nothing was changed\n`);
    return;
  }

  // With --json, stdout holds the JSON alone: the log goes to stderr.
  const base = createLogger(
    options.json ? { level, destination: pino.destination({ dest: 2, sync: true }) } : { level },
  );
  const logger = base.child({ instance: config.instance, job: name });
  const supervision = superviseRun({
    name,
    logger,
    faultLogger: base.child({ instance: config.instance }),
    helpers,
  });
  const results: Array<{ scheduledAt: number; result: FireResult }> = [];
  const { backfillJob } = await import('../../scheduler/runner.ts');
  const toRun = actions.filter(({ action }) => action === 'run').map(({ scheduledAt }) => scheduledAt);
  let givenUpCode: number | undefined;
  try {
    logger.info(
      {
        from: iso(from),
        to: iso(to),
        occurrences: instants.length,
        toRun: toRun.length,
        reason: options.reason,
      },
      `backfilling ${name}: ${toRun.length} of ${instants.length} occurrences to run`,
    );
    const backfilled = backfillJob(config, name, instants, base, {
      signal: supervision.signal,
      onAttemptAborted: supervision.onAttemptAborted,
      actor: actorName(),
      ...(options.reason === undefined ? {} : { reason: options.reason }),
      onResult: (scheduledAt, result) => {
        results.push({ scheduledAt, result });
        if (!options.json) stderr.write(`${resultLine(name, scheduledAt, timezone, result, errorStyles)}\n`);
      },
    });
    givenUpCode = await Promise.race([backfilled.then(() => undefined), supervision.givenUp]);
  } finally {
    supervision.dispose();
  }
  if (givenUpCode !== undefined) {
    stderr.write(
      `${errorStyles.red(`${name}: gave up: the job ignored its aborted signal for ${abortSettleMs / 1_000} s`)}\n`,
    );
    helpers.setExitCode(givenUpCode);
    return;
  }
  if (options.json) {
    const entries = results.map(({ scheduledAt, result }) => ({
      scheduledAt: iso(scheduledAt),
      outcome: result.outcome,
      reason: result.outcome === 'skipped' ? (result.reason ?? null) : null,
      token: result.token ?? null,
      error: result.error === undefined ? null : describeError(result.error),
    }));
    stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
  }
  const ran = results.filter(({ result }) => result.outcome === 'success').length;
  const done = results.filter(
    ({ result }) => result.outcome === 'skipped' && result.reason === 'already-done',
  ).length;
  const rest = results.length - ran - done;
  if (!options.json) {
    const summary = `${name}: backfill of [${iso(from)}, ${iso(to)}): ${ran} ran, ${done} already done${rest === 0 ? '' : `, ${rest} failed or skipped`}`;
    stderr.write(`${rest === 0 ? errorStyles.green(summary) : errorStyles.red(summary)}\n`);
  }
  const interruptedBy = supervision.interruptedBy();
  if (supervision.faults.faulted) helpers.setExitCode(faultExitCode);
  else if (interruptedBy !== undefined) helpers.setExitCode(signalExitCodes[interruptedBy]!);
  else helpers.setExitCode(rest === 0 ? backfillExitCodes.done : backfillExitCodes.failed);
}

/**
 * Refuses a range the ledger may no longer hold: an occurrence whose record was dropped past the
 * record limit would run again.
 */
function checkRangeKept(
  job: ResolvedJob,
  records: readonly RunRecord[],
  from: number,
  recordLimit: number,
): void {
  const oldest = records.at(-1);
  if (oldest !== undefined && records.length >= recordLimit && from < oldest.scheduledAt) {
    throw new UsageError(
      `--from (${iso(from)}) is older than the oldest record the run ledger keeps of ${job.name} (${iso(oldest.scheduledAt)}; it keeps ${recordLimit}, ledgerRecordLimit): an occurrence whose record was dropped could run twice; use --from ${iso(oldest.scheduledAt)} or later`,
    );
  }
}

function resultLine(
  name: string,
  scheduledAt: number,
  timezone: string,
  result: FireResult,
  styles: CommandHelpers['errorStyles'],
): string {
  const at = `${name} ${formatTimeIn(new Date(scheduledAt), timezone)}`;
  const token = result.token === undefined ? '' : `, token ${result.token}`;
  switch (result.outcome) {
    case 'success':
      return styles.green(`${at}: success${token}`);
    case 'failure':
      return styles.red(`${at}: failed${token}: ${describeError(result.error)}`);
    default:
      return result.reason === 'already-done'
        ? styles.dim(`${at}: already done`)
        : styles.yellow(
            `${at}: skipped (${result.reason ?? 'unknown reason'})${result.error === undefined ? '' : `: ${describeError(result.error)}`}`,
          );
  }
}

function iso(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
