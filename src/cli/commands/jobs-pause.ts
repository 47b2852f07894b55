import type { PausableRunLedger } from '../../ledger/contract.ts';
import type { ResolvedJob } from '../../scheduler/job.ts';
import type { CommandHelpers } from '../command-helpers.ts';
import { localTimezone } from '../time-format.ts';
import { describePause, jobNamed, pauseJobIn, resumeJobIn, sharedPausesOf } from '../views/jobs.ts';
import { type StoreReadFailure, storeFailure } from '../views/store-read.ts';

/** `resil jobs pause` and `resil jobs resume` exit codes (a bad config or unknown job is 2). */
const pauseExitCodes = { done: 0, storeError: 1 } as const;

/**
 * The config's store, when it can pause jobs fleet-wide; else the reason is written to stderr,
 * the exit code set to 1, and `undefined` returned.
 */
function sharedLedgerOf(
  helpers: CommandHelpers,
  store: object,
  command: string,
): PausableRunLedger | undefined {
  const shared = sharedPausesOf(store);
  if ('ledger' in shared) return shared.ledger;
  helpers.stderr.write(
    `${helpers.errorStyles.red('error:')} resil jobs ${command} needs a shared store that every resil run reads, RedisLockStore, PostgresLockStore or MysqlLockStore: ${shared.why}\n`,
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
  const read = await pauseJobIn(ledger, job, config.instance, options.reason);
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
  const read = await resumeJobIn(ledger, job);
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
