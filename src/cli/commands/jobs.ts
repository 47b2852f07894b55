import { type Command, InvalidArgumentError } from 'commander';
import type { CommandHelpers } from '../command-helpers.ts';
import { maxReasonLength } from '../reason.ts';

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

/** Parses `--reason`: some text, at most `maxReasonLength` characters, else a usage error (exit code 2). */
function parseReason(value: string): string {
  const reason = value.trim();
  if (reason === '' || reason.length > maxReasonLength) {
    throw new InvalidArgumentError(`Expected some text of at most ${maxReasonLength} characters.`);
  }
  return reason;
}

/**
 * Checks the form of an instant (`2026-12-01`, `2026-12-01T02:00`, `2026-12-01T02:00Z`,
 * `...+01:00`); the command reads it in the job's timezone when it has no zone.
 */
function parseInstant(value: string): string {
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(value)) {
    throw new InvalidArgumentError(
      'Expected an ISO 8601 instant, e.g. 2026-12-01, 2026-12-01T02:00 or 2026-12-01T02:00Z.',
    );
  }
  return value;
}

/**
 * `resil jobs list`, `resil jobs history <name>`, `resil jobs next <name>`, `resil jobs run <name>`,
 * `resil jobs pause <name>` and `resil jobs resume <name>`.
 */
export function registerJobsCommands(program: Command, helpers: CommandHelpers): void {
  const jobs = program
    .command('jobs')
    .description(
      "list the jobs of the config, show a job's run history or next runs, run one now or backfill its past occurrences, or pause and resume one fleet-wide",
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
  $ resil jobs backfill nightly-report --from 2026-12-01 --to 2026-12-04 --dry-run
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
    .option('--reason <text>', 'why, recorded with the run (jobs history shows it)', parseReason)
    .option(
      '--force',
      'run it even while it is paused, and at once beside any running occurrence (its overlap policy is not asked)',
    )
    .addHelpText(
      'after',
      `
The run is recorded as a manual one (trigger "manual"), with who ran it (user@host) and --reason.
It meets the job's overlap policy as a fire would: skip (the default) does not run it while
another occurrence holds its lock (exit 3, not recorded); buffer-one and buffer-all wait for it,
up to the job's starting deadline; cancel-other cancels it; allow-all runs beside it. --force runs
at once beside it, under a lease and fencing token of its own.
A paused job is not run (exit 3, naming who paused it) unless --force is given.
Timeout, lost lease or Ctrl-C abort the job's signal; a job that has not settled 5 s later is
given up on (an error naming it is logged; its lease expires after its ttl). Ctrl-C prints
"aborting <job>... press Ctrl-C again to force"; a second Ctrl-C exits at once. Started by npm
(npx resil jobs run), npm's exit aborts the job as SIGTERM would.
Log level: LOG_LEVEL (trace, debug, info, warn, error, fatal or silent; default info).

Exit codes: 0 the job succeeded; 1 it failed, was given up on, or was not run because the store
was unreachable or is not set up (every command exits 1 then), or an error outside the job or its
process.exit() stopped the command; 3 skipped: its lock is held elsewhere, or it is paused (without --force);
2 bad config, unknown job, bad --reason or bad LOG_LEVEL; 130 interrupted by SIGINT (143 SIGTERM).

Examples:
  $ resil jobs run nightly-report
  $ resil jobs run nightly-report --reason "rerun after the fix of #4521"
  $ resil jobs run nightly-report --force
  $ resil --config ops/resil.config.ts jobs run cache-rebuild`,
    )
    .action(async (name: string, options: { force?: boolean; reason?: string }) => {
      const { runJob } = await import('./jobs-run.ts');
      await runJob(helpers, name, {
        force: options.force === true,
        ...(options.reason === undefined ? {} : { reason: options.reason }),
      });
    });

  jobs
    .command('backfill')
    .description(
      "run the job's past occurrences in [from, to), oldest first, each at most once across the fleet",
    )
    .argument('<name>', "the job's name")
    .requiredOption(
      '--from <instant>',
      'the first instant of the range (ISO 8601, e.g. 2026-12-01T00:00Z)',
      parseInstant,
    )
    .requiredOption(
      '--to <instant>',
      'the end of the range, excluded (ISO 8601), not in the future',
      parseInstant,
    )
    .option(
      '--dry-run',
      'print each occurrence and what would happen to it (run or already-done); change nothing',
    )
    .option('--json', 'print one JSON array instead of a table')
    .option('--reason <text>', 'why, recorded with each run (jobs history shows it)', parseReason)
    .option(`--max <n>`, `the most occurrences the range may hold, 1 to ${maxCount}`, parseCount, 100)
    .addHelpText(
      'after',
      `
Each occurrence goes through the same claim as a fire of its schedule: it runs at most once across
the fleet and across backfills running at the same time; one that ran, runs or is queued is left
alone (already-done); one skipped as missed or paused, or skipped by its overlap policy during a
backfill, runs. They run one after another, under the job's overlap policy (an occurrence of the
schedule running meanwhile can make one skip: a later backfill runs it), each recorded with
trigger "backfill", who ran it (user@host) and --reason.
An instant without a zone (2026-12-01T02:00) is read in the job's timezone.
The ledger must still hold the range: a --from older than the ledger's retention, or older than
the job's oldest record when the job has as many records as the ledger keeps, is refused (exit 2),
since an occurrence whose record was dropped could run twice.
--json prints [{ "scheduledAt", "action" }] with --dry-run (action run or already-done), else
[{ "scheduledAt", "outcome", "reason", "token", "error" }] (outcome success, failure or skipped).

Exit codes: 0 every occurrence ran or was already done (or, --dry-run, listed); 1 one failed or was
skipped (overlap, paused, ...), or the store was unreachable; 2 bad config, unknown job, bad
option, a range of more than --max occurrences, or a range the ledger no longer holds;
130 interrupted by SIGINT (143 SIGTERM).

Examples:
  $ resil jobs backfill nightly-report --from 2026-12-01 --to 2026-12-04 --dry-run
  $ resil jobs backfill nightly-report --from 2026-12-01 --to 2026-12-04 --reason "outage of 1-3 Dec"
  $ resil jobs backfill sync --from 2026-12-04T10:00Z --to 2026-12-04T12:00Z --max 200 --json`,
    )
    .action(
      async (
        name: string,
        options: { from: string; to: string; dryRun?: boolean; json?: boolean; reason?: string; max: number },
      ) => {
        const { backfill } = await import('./jobs-backfill.ts');
        await backfill(helpers, name, {
          from: options.from,
          to: options.to,
          dryRun: options.dryRun === true,
          json: options.json === true,
          max: options.max,
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        });
      },
    );

  jobs
    .command('pause')
    .description(
      'pause a job fleet-wide, in the store: every resil run skips its fires (reason paused) from its next fire on, without a restart',
    )
    .argument('<name>', "the job's name")
    .option('--reason <text>', 'why, kept with the pause and shown by jobs list and jobs run', parseReason)
    .addHelpText(
      'after',
      `
The pause is kept in the store with who paused it (the config's instance name, else host:pid),
when (the store's clock) and why. An occurrence running when it is paused runs on. resil jobs run
refuses a paused job unless --force. Pausing a paused job replaces who, when and why.
Needs a shared store (RedisLockStore, PostgresLockStore or MysqlLockStore): the in-memory default
store is this process's only.

Exit codes: 0 paused; 1 the store is not a shared one, or unreachable (within 5 s);
2 bad config, unknown job or bad --reason (empty, or over ${maxReasonLength} characters).

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
