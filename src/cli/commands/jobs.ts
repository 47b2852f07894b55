import { type Command, InvalidArgumentError } from 'commander';
import type { CommandHelpers } from '../program.ts';

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

/** `resil jobs list`, `resil jobs history <name>`, `resil jobs next <name>` and `resil jobs run <name>`. */
export function registerJobsCommands(program: Command, helpers: CommandHelpers): void {
  const jobs = program
    .command('jobs')
    .description("list the jobs of the config, show a job's run history or next runs, or run one now")
    .addHelpText(
      'after',
      `
Examples:
  $ resil jobs list
  $ resil jobs list --json
  $ resil jobs history nightly-report
  $ resil jobs next nightly-report -n 10
  $ resil jobs run nightly-report`,
    );

  jobs
    .command('list')
    .description(
      'one row per job: name, schedule, timezone, next run, lock key and, when the store keeps a run ledger, the last run and its outcome',
    )
    .option('--json', 'print one JSON array instead of a table')
    .addHelpText(
      'after',
      `
Exit codes: 0 listed; 2 bad config.

Examples:
  $ resil jobs list
  $ resil jobs list --json | jq '.[] | select(.nextRun != null) | .name'`,
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
A local time that does not exist (the spring-forward gap) has no instant: a 30 2 * * * job in
Europe/Berlin has none on the day clocks go from 02:00 to 03:00. A time that occurs twice (fall
back) is one instant for a fixed-time schedule, two for an interval schedule.

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
    .addHelpText(
      'after',
      `
Timeout, lost lease or Ctrl-C abort the job's signal; a job that has not settled 5 s later is
given up on (an error naming it is logged; its lease expires after its ttl). Ctrl-C prints
"aborting <job>... press Ctrl-C again to force"; a second Ctrl-C exits at once.
Log level: LOG_LEVEL (trace, debug, info, warn, error, fatal or silent; default info).

Exit codes: 0 the job succeeded; 1 it failed, was given up on, or the store was unreachable;
3 skipped: its lock is held elsewhere; 2 bad config, unknown job or bad LOG_LEVEL;
130 interrupted by SIGINT (143 SIGTERM).

Examples:
  $ resil jobs run nightly-report
  $ resil --config ops/resil.config.ts jobs run cache-rebuild`,
    )
    .action(async (name: string) => {
      const { runJob } = await import('./jobs-run.ts');
      await runJob(helpers, name);
    });
}
