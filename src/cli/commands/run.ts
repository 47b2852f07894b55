import type { Command } from 'commander';
import type { ResolvedConfig } from '../../scheduler/job.ts';
import { boundHeapGrowth } from '../heap-growth.ts';
import type { TextOutput } from '../output.ts';
import { untilStopped } from '../stop-signals.ts';
import { resolveLogLevel } from '../usage-error.ts';

/** What `resil run` needs from the program around it (a subset of the program's `CommandHelpers`). */
export interface RunCommandHelpers {
  /** Loads the config (`--config <file>` or found from the working directory). Throws `ConfigError`. */
  loadConfig(options?: object): Promise<ResolvedConfig>;
  readonly stderr?: TextOutput;
  /** The process's exit code once the action returns. Defaults to setting `process.exitCode`. */
  setExitCode?(code: number): void;
}

/**
 * Adds `resil run [--job <name>...]`: schedules the jobs and runs until SIGINT/SIGTERM, then stops
 * gracefully (no new fires, running jobs finish within `shutdownGrace`, then their signals abort
 * and their leases are released) and exits 0. A second signal exits at once.
 */
export function registerRunCommand(program: Command, helpers: RunCommandHelpers): Command {
  return program
    .command('run')
    .description('schedule every enabled job (or the ones named with --job) and run until SIGINT/SIGTERM')
    .option('-j, --job <name...>', 'run only this job (repeatable; a named job runs even if disabled)')
    .option(
      '--log-level <level>',
      'trace, debug, info, warn, error, fatal or silent (default: LOG_LEVEL or info)',
    )
    .option(
      '--metrics <[host:]port>',
      'serve Prometheus metrics and health checks on this port (a bare port binds 127.0.0.1 only)',
    )
    .addHelpText(
      'after',
      `
Each fire runs one occurrence (job, scheduledAt): scheduledAt is the instant the schedule named,
the same on every instance. The fire asks the store's run ledger what to do with it: run it
(granted a lease and a fencing token), wait, or skip it; then the job's timeout and retry, then run(ctx).

  never early   no occurrence starts before the store's clock reaches scheduledAt
  once          an occurrence that ran anywhere in the fleet is skipped (already-done)
  overlap       while an earlier occurrence runs, the job's overlap policy decides: skip (default,
                reason overlap), buffer-one, buffer-all (wait, oldest first), cancel-other, allow-all
  concurrency   with concurrency: n, up to n occurrences run at once, each under its own lease;
                the overlap policy decides when n run (cancel-other cancels the oldest)
  takeover      an occurrence whose holder stopped renewing its lease (crash, freeze, partition) is
                run again by another instance, with a higher token, until its lease has been
                expired for startingDeadline
  missed        a fire that cannot start within the job's startingDeadline (default 1 min) is skipped
  catch-up      with catchUp, the latest occurrence inside that window runs once at start
                if the ledger has seen the job but not that occurrence
  outage        store unreachable: the fire asks again (backing off) until its startingDeadline,
                then is skipped (store-unavailable); the runner stays up
  not set up    store reachable but not set up, and it cannot set itself up (a missing schema,
                privilege or table): skipped (store-setup), logged as an error saying what to do
  DST           a fixed local time in a spring-forward gap runs right after the gap (the job's
                dst: 'shift', the default) or not that day (dst: 'skip'); a time that occurs twice
                runs once. At start, one line per job whose fixed time a transition of the next
                12 months touches, with the date and what will happen

Instances: once started, the instance registers in the store (name, host, pid, version, jobs,
its clock's offset to the store's) and renews that every 5 s; \`resil instances\` lists it until
it stops cleanly, or 15 s after its last heartbeat.

Logs: one JSON line per fire on stdout (pretty on a terminal) with job, scheduledAt, outcome,
reason, token, attempt and durationMs.

Metrics (--metrics 9464 binds 127.0.0.1; --metrics 0.0.0.0:9464 or [::]:9464 every interface):
  GET /metrics   Prometheus text format: resil_job_runs_total, resil_job_skips_total,
                 resil_job_duration_seconds, resil_job_lateness_seconds,
                 resil_job_last_success_timestamp_seconds (fleet-wide, from the run ledger),
                 resil_job_next_run_timestamp_seconds, resil_job_running, resil_lock_lost_total,
                 resil_fence_rejections_total, resil_job_stray_errors_total,
                 resil_job_config_drift (all labelled job_name), resil_store_up,
                 resil_store_clock_offset_seconds, and Node.js process metrics
  GET /livez     200 while the process answers
  GET /readyz    200 once the store answers (probed every second, 1 s timeout) and the offset to
                 its clock is known; else, and while stopping, 503 with a JSON body naming each
                 failing check and why ({"status":"fail","checks":{"store":{"status":"fail",
                 "reason":"..."}}}); ?verbose lists every check
  anything else  404

Stop: SIGINT/SIGTERM stops firing, lets running jobs finish within shutdownGrace (default 30 s),
then aborts their signals, releases their leases and exits 0; jobs that ignore their aborted
signal for 5 s more are named in an error line and left behind (their leases expire after their
ttl). A second signal exits at once (130 for SIGINT, 143 for SIGTERM). Started by npm
(\`npx resil run\`, \`npm start\`), the runner also stops gracefully when npm exits, as npm does
on SIGTERM without passing it on (checked every second).

Faults: an error that escapes a job (a rejection nobody awaits, a throw in a timer it started)
fails that job's run; one outside any job, or a job's process.exit(), is logged and stops the
runner gracefully, exit 1. isolation: 'worker' runs a job in a worker thread of its own.

Exit codes: 0 after a clean stop; 1 after a graceful stop on a fault; 2 bad config, unknown
--job, bad --log-level / LOG_LEVEL, or a bad --metrics (not a port 1-65535, a malformed
host:port, or an address it cannot listen on: the port in use); 130/143 after a second
SIGINT/SIGTERM.

Examples:
  $ resil run
  $ resil run --job nightly-report --job heartbeat
  $ resil run --metrics 9464
  $ LOG_LEVEL=debug resil --config ops/resil.config.ts run`,
    )
    .action(async (options: { job?: string[]; logLevel?: string; metrics?: string }, command: Command) => {
      const setExitCode = helpers.setExitCode ?? ((code: number) => (process.exitCode = code));
      // Checked before the config loads: a typo should not wait for the store to connect.
      const level = resolveLogLevel(options.logLevel);
      // Without --metrics, nothing of the metrics module (nor prom-client) is loaded.
      const metricsModule = options.metrics === undefined ? undefined : await import('../metrics/index.ts');
      const metricsAddress = metricsModule?.parseMetricsAddress(options.metrics!);
      const config = await helpers.loadConfig();
      // A long-lived process whose bursts of fires make mostly short-lived garbage: its heap is
      // kept closer to what it holds (see heap-growth.ts).
      boundHeapGrowth();
      // Loaded here, not at the top: `resil --help` should not pay for croner, pino and the scheduler.
      const [{ createLogger }, { JobRunner }] = await Promise.all([
        import('../logger.ts'),
        import('../../scheduler/runner.ts'),
      ]);
      // An unknown --job throws UnknownJobError, reported like `jobs run`'s (exit 2).
      // A burst of fires logs thousands of lines a second: gathered, they cost a few writes.
      const base = createLogger({ level, buffered: true });
      const runner = new JobRunner({
        config,
        logger: base,
        jobs: options.job,
        version: command.parent?.version(),
      });
      const logger = base.child({ instance: config.instance });
      // Why the store fails (WRONGPASS, an unknown database, a refused connection): said once,
      // plainly, at start and whenever the reason changes, besides each skipped fire's line.
      const { describeStoreError, watchStoreConnection } = await import('../views/store-read.ts');
      let told: string | undefined;
      const tell = (reason: string) => {
        if (reason !== told) logger.error({ error: reason }, `the store fails: ${reason}`);
        told = reason;
      };
      const connection = watchStoreConnection(config.store, tell);
      runner.on((event) => {
        if (
          event.type === 'skipped' &&
          (event.reason === 'store-unavailable' || event.reason === 'store-setup')
        ) {
          // The client's own error names the root cause (each fire's error would only say "not ready").
          tell(describeStoreError(connection.lastError ?? event.error));
        } else if (event.type !== 'skipped') {
          told = undefined; // it answers again: the next failure is news
        }
      });
      // Listening before the first fire: a port in use exits 2 without having run anything.
      const metrics =
        metricsModule === undefined || metricsAddress === undefined
          ? undefined
          : await metricsModule.startMetrics({
              address: metricsAddress,
              runner,
              store: config.store,
              logger,
              connectionError: () => connection.lastError,
            });

      // A job's stray error fails its run; one outside any job, or a job's process.exit(), stops
      // the runner as a signal would, and it exits non-zero.
      const fault = new AbortController();
      const { containJobFaults, faultExitCode } = await import('../job-faults.ts');
      const faults = containJobFaults({ logger, onFault: () => fault.abort() });
      // From the stop signal on: /readyz says 503, no new fire starts, running jobs finish.
      const stopped = untilStopped({
        logger,
        stopping: 'stopping gracefully',
        stop: () => {
          metrics?.stopping();
          return runner.stop();
        },
        abort: fault.signal,
      });
      await runner.start();
      await stopped;
      await metrics?.close();
      connection.dispose();
      const code = faults.faulted ? faultExitCode : 0;
      logger.info({ code }, 'exiting');
      logger.flush();
      faults.dispose();
      setExitCode(code);
    });
}
