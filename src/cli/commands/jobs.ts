import type { Command } from 'commander';
import type { CommandHelpers } from '../program.ts';

/** `resil jobs list` and `resil jobs run <name>`. */
export function registerJobsCommands(program: Command, helpers: CommandHelpers): void {
  const jobs = program
    .command('jobs')
    .description('list the jobs of the config, or run one now')
    .addHelpText(
      'after',
      `
Examples:
  $ resil jobs list
  $ resil jobs list --json
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
