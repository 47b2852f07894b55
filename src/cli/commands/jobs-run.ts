import { hasJobPauses } from '../../ledger/contract.ts';
import { describeError } from '../../scheduler/credentials.ts';
import { ledgerKeyOf } from '../../scheduler/job.ts';
import { type FireResult, runJobNow } from '../../scheduler/runner.ts';
import type { LeaseInfo } from '../../strategies/lock/store.ts';
import type { CommandHelpers } from '../command-helpers.ts';
import { faultExitCode } from '../job-faults.ts';
import { createLogger } from '../logger.ts';
import { abortSettleMs, actorName, superviseRun } from '../run-supervision.ts';
import { signalExitCodes } from '../stop-signals.ts';
import { localTimezone } from '../time-format.ts';
import { resolveLogLevel } from '../usage-error.ts';
import { describePause, jobNamed } from '../views/jobs.ts';
import { describeStoreError, readStore, watchStoreConnection } from '../views/store-read.ts';

/**
 * `resil jobs run` exit codes (CONTRACT.md); a paused job is skipped like a held lock. An
 * unreachable store is 1, as in every command: the job was not run, and the fleet's state (which
 * only 3 reports) is unknown.
 */
const jobsRunExitCodes = { success: 0, failure: 1, configError: 2, lockHeld: 3 } as const;

/** Exit code for a manual run's result: a skip because the store is down is a failure to run. */
function exitCodeOf(result: FireResult): number {
  if (result.outcome === 'success') return jobsRunExitCodes.success;
  if (
    result.outcome === 'failure' ||
    result.reason === 'store-unavailable' ||
    result.reason === 'store-setup'
  )
    return jobsRunExitCodes.failure;
  return jobsRunExitCodes.lockHeld;
}

function describeResult(
  name: string,
  result: FireResult,
  connectionError: unknown,
  holder: LeaseInfo | undefined,
  concurrency = 1,
): string {
  const token = result.token === undefined ? '' : `, token ${result.token}`;
  const attempts =
    result.attempts === undefined ? '' : `, ${result.attempts} attempt${result.attempts === 1 ? '' : 's'}`;
  switch (result.outcome) {
    case 'success':
      return `${name}: success${token}${attempts}`;
    case 'failure':
      return `${name}: failed${token}${attempts}: ${describeError(result.error)}`;
    default: {
      // Not a skip (exit 3, decided by the fleet's state): a failure to use the store (exit 1).
      if (result.reason === 'store-unavailable') {
        const why =
          result.error === undefined ? '' : `: ${describeStoreError(result.error, connectionError)}`;
        return `${name}: not run: the lock store is unreachable${why}`;
      }
      if (result.reason === 'store-setup') return `${name}: not run: ${describeStoreError(result.error)}`;
      const reason =
        result.reason === 'overlap' && concurrency > 1
          ? `${concurrency} of its occurrences run already (concurrency: ${concurrency})`
          : result.reason === 'overlap'
            ? `its lock is held elsewhere${holder === undefined ? '' : `, by ${holder.owner.split('/')[0]} (token ${holder.token})`}`
            : (result.reason ?? 'unknown reason');
      return `${name}: skipped: ${reason}`;
    }
  }
}

/**
 * `resil jobs run <name>`: one run now through the job's lock, ledger, timeout and retry.
 * Logs go to stdout like `resil run`'s; the one-line result goes to stderr.
 *
 * Once the job's signal aborts (its timeout, a lost lease, or Ctrl-C) the job gets 5 s to settle;
 * a job that ignores its signal is then given up on: an error naming it is logged and the command
 * exits 1 (130 after SIGINT, 143 after SIGTERM). Ctrl-C aborts the job's signal (its lease is then
 * released) and exits 130 once it settles; a second Ctrl-C exits at once. Started by npm
 * (`npx resil jobs run`), npm's exit aborts the job as a SIGTERM would (see launcher.ts).
 *
 * A job paused fleet-wide (`resil jobs pause`) is not run, exit 3, unless `force`: the run
 * ledger grants manual claims whatever the pause, so this command decides. `force` also runs it
 * beside any running occurrence; without it, the job's overlap policy applies. The run is
 * recorded as `manual`, by `user@host`, with `reason`.
 */
export async function runJob(
  helpers: CommandHelpers,
  name: string,
  options: { force: boolean; reason?: string },
): Promise<void> {
  const level = resolveLogLevel(undefined);
  const config = await helpers.loadConfig();
  const { errorStyles, stderr } = helpers;
  // Throws UnknownJobError before anything runs: reported with exit code 2.
  const job = jobNamed(config, name);
  const { store } = config;
  if (!options.force && hasJobPauses(store)) {
    const read = await readStore(store, () => store.pauseOf(name, { key: ledgerKeyOf(job) }));
    if (!read.ok) {
      const what = read.notSetUp ? 'not set up' : 'unreachable';
      stderr.write(`${errorStyles.red(`${name}: not run: the lock store is ${what}: ${read.reason}`)}\n`);
      helpers.setExitCode(jobsRunExitCodes.failure);
      return;
    }
    if (read.value !== undefined) {
      const pause = describePause(read.value, job.timezone ?? localTimezone());
      stderr.write(
        `${errorStyles.yellow(`${name}: skipped: paused ${pause}`)}; resume it with resil jobs resume ${name}, or run it anyway with --force\n`,
      );
      helpers.setExitCode(jobsRunExitCodes.lockHeld);
      return;
    }
  }
  const base = createLogger({ level });
  // For this command's own lines; the run's lines get the same bindings inside runJobNow.
  const logger = base.child({ instance: config.instance, job: name });
  const supervision = superviseRun({
    name,
    logger,
    faultLogger: base.child({ instance: config.instance }),
    helpers,
  });
  const connection = watchStoreConnection(config.store);
  let outcome: { result: FireResult } | { code: number };
  try {
    outcome = await Promise.race([
      runJobNow(config, name, base, {
        signal: supervision.signal,
        onAttemptAborted: supervision.onAttemptAborted,
        force: options.force,
        actor: actorName(),
        ...(options.reason === undefined ? {} : { reason: options.reason }),
      }).then((result) => ({ result })),
      supervision.givenUp.then((code) => ({ code })),
    ]);
  } finally {
    supervision.dispose();
    connection.dispose();
  }
  if ('code' in outcome) {
    stderr.write(
      `${errorStyles.red(`${name}: gave up: the job ignored its aborted signal for ${abortSettleMs / 1_000} s`)}\n`,
    );
    helpers.setExitCode(outcome.code);
    return;
  }
  const { result } = outcome;
  if (supervision.faults.faulted) {
    const line = describeResult(name, result, connection.lastError, undefined);
    stderr.write(`${errorStyles.red(`${line} (stopped by a fault, see the log)`)}\n`);
    helpers.setExitCode(faultExitCode);
    return;
  }
  const interruptedBy = supervision.interruptedBy();
  if (interruptedBy !== undefined && result.outcome !== 'success') {
    // Settled after Ctrl-C: an interruption, not a failure of the job.
    stderr.write(`${errorStyles.yellow(`${name}: interrupted by ${supervision.interruption()}`)}\n`);
    helpers.setExitCode(signalExitCodes[interruptedBy]!);
    return;
  }
  const code = exitCodeOf(result);
  // Who holds the lock, when the store can say (the owner id starts with the holder's instance).
  const concurrency = job.concurrency ?? 1;
  // A job of more than one occurrence at once holds no lease of its key: there is no one holder.
  const holder =
    result.reason === 'overlap' &&
    job.lock !== false &&
    concurrency === 1 &&
    typeof store.inspect === 'function'
      ? await readStore(store, () => store.inspect!(ledgerKeyOf(job)))
      : undefined;
  const line = describeResult(
    name,
    result,
    connection.lastError,
    holder?.ok ? holder.value : undefined,
    concurrency,
  );
  stderr.write(
    `${code === 0 ? errorStyles.green(line) : code === 1 ? errorStyles.red(line) : errorStyles.yellow(line)}\n`,
  );
  helpers.setExitCode(code);
}
