import { type Command, InvalidArgumentError } from 'commander';
import type { CommandHelpers } from '../command-helpers.ts';

/** The most `jobs history --limit` and `jobs next -n` accept. */
const maxCount = 1_000;

/** Parses a count option: a whole number from 1 to `maxCount`, else a usage error (exit code 2). */
function parseCount(value: string): number {
  const count = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(count >= 1 && count <= maxCount)) {
    throw new InvalidArgumentError(`Expected a whole number from 1 to ${maxCount}.`);
  }
  return count;
}

/**
 * `resil jobs list`, `resil jobs history <name>`, `resil jobs next <name>`, `resil jobs run <name>`,
 * `resil jobs pause <name>` and `resil jobs resume <name>`.
 */
export function registerJobsCommands(program: Command, helpers: CommandHelpers): void {
  const jobs = program
    .command('jobs')
    .description(
      "list the jobs of the config, show a job's run history or next runs, run one now, or pause and resume one fleet-wide",
    )
    .addHelpText(
      'after',
      `
Examples:
  $ resil jobs list
  $ resil jobs list --json
  $ resil jobs history nightly-report
  $ resil jobs next nightly-report -n 10
  $ resil jobs run nightly-report
  $ resil jobs pause nightly-report --reason "database migration"
  $ resil jobs resume nightly-report`,
    );

  jobs
    .command('list')
    .description(
      'one row per job: name, schedule, timezone, next run, lock key and, when the store keeps a run ledger, the last run and its outcome, and whether it is paused',
    )
    .option('--json', 'print one JSON array instead of a table')
    .addHelpText(
      'after',
      `
While a job is paused (resil jobs pause), a PAUSED column shows it, with who paused it;
--json has "paused": true|false and "pause": { "by", "pausedAt", "reason" } or null.
While live instances (resil instances) run different definitions of a job, a DRIFT column shows
it; --json has "drift": null, or one { "fingerprint", "instances", "fields" } per definition.

Exit codes: 0 listed; 2 bad config.

Examples:
  $ resil jobs list
  $ resil jobs list --json | jq '.[] | select(.nextRun != null) | .name'
  $ resil jobs list --json | jq -r '.[] | select(.paused) | .name'
  $ resil jobs list --json | jq '.[] | select(.drift != null) | {name, drift}'`,
    )
    .action(async (options: { json?: boolean }) => {
      const { listJobs } = await import('./jobs-list.ts');
      await listJobs(helpers, { json: options.json === true });
    });

  jobs
    .command('history')
    .description(
      "the job's latest occurrences in the run ledger, newest first: outcome, instance, token, duration, error",
    )
    .argument('<name>', "the job's name")
    .option('--limit <n>', `how many occurrences to show, 1 to ${maxCount}`, parseCount, 20)
    .option('--json', 'print one JSON array instead of a table')
    .addHelpText(
      'after',
      `
Occurrences are shown in the job's timezone, with the zone's name; start and end times are the
store's clock. A store without a run ledger, or the in-memory default store (which holds this
process's runs only), gives an empty history and a note on stderr (no note with --json).

Exit codes: 0 shown (also when empty); 1 store unreachable (within 5 s);
2 bad config, unknown job or bad --limit.

Examples:
  $ resil jobs history nightly-report
  $ resil jobs history nightly-report --limit 100
  $ resil jobs history nightly-report --json | jq '.[] | select(.outcome == "failure") | .error'`,
    )
    .action(async (name: string, options: { limit: number; json?: boolean }) => {
      const { showJobHistory } = await import('./jobs-history.ts');
      await showJobHistory(helpers, name, { limit: options.limit, json: options.json === true });
    });

  jobs
    .command('next')
    .description("the job's next instants as resil run fires them, in the job's timezone, DST-aware")
    .argument('<name>', "the job's name")
    .option('-n, --count <n>', `how many instants to show, 1 to ${maxCount}`, parseCount, 5)
    .option('--json', 'print one JSON array of ISO 8601 UTC instants instead of a table')
    .addHelpText(
      'after',
      `
DST: a fixed local time (no * or step in the second, minute and hour fields) that does not exist,
in the spring-forward gap, runs at the first instant after the gap with the job's dst: 'shift'
(the default; a 30 2 * * * job in Europe/Berlin runs at 03:00 CEST on the day clocks go from
02:00 to 03:00, marked "shifted" in the DST column) and not that day with dst: 'skip'. A fixed
time that occurs twice (fall back) is one instant, its first; an interval schedule has one
instant per real instant. --json prints the same instants.

Exit codes: 0 shown; 2 bad config, unknown job or bad -n.

Examples:
  $ resil jobs next nightly-report
  $ resil jobs next nightly-report -n 20
  $ resil jobs next nightly-report --json | jq -r '.[0]'`,
    )
    .action(async (name: string, options: { count: number; json?: boolean }) => {
      const { showNextRuns } = await import('./jobs-next.ts');
      await showNextRuns(helpers, name, { count: options.count, json: options.json === true });
    });

  jobs
    .command('run')
    .description('run one job now through its full pipeline (lock, timeout, retry), then exit')
    .argument('<name>', "the job's name")
    .option('--force', 'run it even while it is paused (resil jobs pause)')
    .addHelpText(
      'after',
      `
A paused job is not run (exit 3, naming who paused it) unless --force is given.
Timeout, lost lease or Ctrl-C abort the job's signal; a job that has not settled 5 s later is
given up on (an error naming it is logged; its lease expires after its ttl). Ctrl-C prints
"aborting <job>... press Ctrl-C again to force"; a second Ctrl-C exits at once. Started by npm
(npx resil jobs run), npm's exit aborts the job as SIGTERM would.
Log level: LOG_LEVEL (trace, debug, info, warn, error, fatal or silent; default info).

Exit codes: 0 the job succeeded; 1 it failed, was given up on, or was not run because the store
was unreachable or is not set up (every command exits 1 then), or an error outside the job or its
process.exit() stopped the command; 3 skipped: its lock is held elsewhere, or it is paused (without --force);
2 bad config, unknown job or bad LOG_LEVEL; 130 interrupted by SIGINT (143 SIGTERM).

Examples:
  $ resil jobs run nightly-report
  $ resil jobs run nightly-report --force
  $ resil --config ops/resil.config.ts jobs run cache-rebuild`,
    )
    .action(async (name: string, options: { force?: boolean }) => {
      const { runJob } = await import('./jobs-run.ts');
      await runJob(helpers, name, { force: options.force === true });
    });

  jobs
    .command('pause')
    .description(
      'pause a job fleet-wide, in the store: every resil run skips its fires (reason paused) from its next fire on, without a restart',
    )
    .argument('<name>', "the job's name")
    .option('--reason <text>', 'why, kept with the pause and shown by jobs list and jobs run')
    .addHelpText(
      'after',
      `
The pause is kept in the store with who paused it (the config's instance name, else host:pid),
when (the store's clock) and why. An occurrence running when it is paused runs on. resil jobs run
refuses a paused job unless --force. Pausing a paused job replaces who, when and why.
Needs a shared store (RedisLockStore, PostgresLockStore or MysqlLockStore): the in-memory default
store is this process's only.

Exit codes: 0 paused; 1 the store is not a shared one, or unreachable (within 5 s);
2 bad config or unknown job.

Examples:
  $ resil jobs pause nightly-report
  $ resil jobs pause nightly-report --reason "database migration until 14:00"`,
    )
    .action(async (name: string, options: { reason?: string }) => {
      const { pauseJob } = await import('./jobs-pause.ts');
      await pauseJob(helpers, name, options.reason === undefined ? {} : { reason: options.reason });
    });

  jobs
    .command('resume')
    .description('lift a pause: every resil run runs the job again from its next fire on')
    .argument('<name>', "the job's name")
    .addHelpText(
      'after',
      `
Fires skipped while it was paused are not run again. Resuming a job that is not paused changes
nothing (exit 0). Needs a shared store (RedisLockStore, PostgresLockStore or MysqlLockStore).

Exit codes: 0 resumed, or was not paused; 1 the store is not a shared one, or unreachable
(within 5 s); 2 bad config or unknown job.

Examples:
  $ resil jobs resume nightly-report`,
    )
    .action(async (name: string) => {
      const { resumeJob } = await import('./jobs-pause.ts');
      await resumeJob(helpers, name);
    });
}
