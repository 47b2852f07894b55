import { hasJobPauses, type JobPause, type PausableRunLedger } from '../../ledger/contract.ts';
import { ledgerKeyOf, type ResolvedJob } from '../../scheduler/job.ts';
import { formatRelative, formatTimeIn, localTimezone } from '../output.ts';
import type { CommandHelpers } from '../program.ts';
import { jobNamed } from './jobs-next.ts';
import { inMemoryStoreNote, readStore, type StoreReadFailure, storeFailure } from './store-error.ts';

/** `resil jobs pause` and `resil jobs resume` exit codes (a bad config or unknown job is 2). */
const pauseExitCodes = { done: 0, storeError: 1 } as const;

/** `by ops-1 at 2026-12-01 02:00:00 UTC (5m ago), reason: migration` */
export function describePause(pause: JobPause, timezone: string, now = Date.now()): string {
  const at = new Date(pause.pausedAt);
  const reason = pause.reason === undefined ? '' : `, reason: ${pause.reason}`;
  return `by ${pause.by} at ${formatTimeIn(at, timezone)} (${formatRelative(at, now)})${reason}`;
}

/**
 * The config's store, when it can pause jobs fleet-wide; else the reason is written to stderr,
 * the exit code set to 1, and `undefined` returned. The in-memory store can pause, but only in this
 * one-shot process: no `resil run` would ever see it.
 */
function sharedLedgerOf(
  helpers: CommandHelpers,
  store: object,
  command: string,
): PausableRunLedger | undefined {
  const { errorStyles } = helpers;
  let why: string | undefined;
  if (inMemoryStoreNote(store) !== undefined) {
    why = "the config's store is the in-memory MemoryLockStore, which holds this process's runs only";
  } else if (!hasJobPauses(store)) {
    why = "the config's store keeps no run ledger with pauses (pauseJob, resumeJob, pauseOf)";
  }
  if (why === undefined) return store as PausableRunLedger;
  helpers.stderr.write(
    `${errorStyles.red('error:')} resil jobs ${command} needs a shared store that every resil run reads, RedisLockStore or PostgresLockStore: ${why}\n`,
  );
  helpers.setExitCode(pauseExitCodes.storeError);
  return undefined;
}

function storeFailed(helpers: CommandHelpers, failure: StoreReadFailure): void {
  helpers.stderr.write(`${helpers.errorStyles.red('error:')} ${storeFailure(failure)}\n`);
  helpers.setExitCode(pauseExitCodes.storeError);
}

const timezoneOf = (job: ResolvedJob) => job.timezone ?? localTimezone();

/**
 * `resil jobs pause <name> [--reason <text>]`: pauses the job in the store, fleet-wide, by this
 * config's instance name. Exit 0 paused, 1 store without a shared ledger or unreachable, 2 unknown job.
 */
export async function pauseJob(
  helpers: CommandHelpers,
  name: string,
  options: { reason?: string },
): Promise<void> {
  const config = await helpers.loadConfig();
  const job = jobNamed(config, name);
  const ledger = sharedLedgerOf(helpers, config.store, 'pause');
  if (ledger === undefined) return;
  const key = ledgerKeyOf(job);
  const read = await readStore(ledger, async () => {
    await ledger.pauseJob(job.name, {
      key,
      by: config.instance,
      ...(options.reason === undefined ? {} : { reason: options.reason }),
    });
    return ledger.pauseOf(job.name, { key });
  });
  if (!read.ok) return storeFailed(helpers, read);
  const pause = read.value ?? { pausedAt: Date.now(), by: config.instance, reason: options.reason };
  const { styles } = helpers;
  helpers.stdout.write(
    `${styles.yellow('paused')} ${styles.bold(job.name)} ${describePause(pause, timezoneOf(job))}\n` +
      `Every resil run skips its fires (reason paused) from its next fire on, until: resil jobs resume ${job.name}\n`,
  );
}

/**
 * `resil jobs resume <name>`: lifts the job's pause. Exit 0 resumed (also when it was not paused),
 * 1 store without a shared ledger or unreachable, 2 unknown job.
 */
export async function resumeJob(helpers: CommandHelpers, name: string): Promise<void> {
  const config = await helpers.loadConfig();
  const job = jobNamed(config, name);
  const ledger = sharedLedgerOf(helpers, config.store, 'resume');
  if (ledger === undefined) return;
  const key = ledgerKeyOf(job);
  const read = await readStore(ledger, async () => {
    const pause = await ledger.pauseOf(job.name, { key });
    await ledger.resumeJob(job.name, { key });
    return pause;
  });
  if (!read.ok) return storeFailed(helpers, read);
  const { styles } = helpers;
  const pause = read.value;
  helpers.stdout.write(
    pause === undefined
      ? `${styles.bold(job.name)} was not paused: nothing to resume\n`
      : `${styles.green('resumed')} ${styles.bold(job.name)} (paused ${describePause(pause, timezoneOf(job))})\n` +
          'Every resil run runs it again from its next fire on.\n',
  );
}
