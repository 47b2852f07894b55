import { hasJobPauses, type PausableRunLedger } from '../../ledger/contract.ts';
import { withDeadline } from '../../pipeline/time.ts';
import { describeError } from '../../scheduler/credentials.ts';
import { ShutdownError } from '../../scheduler/errors.ts';
import type { SchedulerEvent } from '../../scheduler/events.ts';
import { ledgerKeyOf, type ResolvedConfig, type ResolvedJob } from '../../scheduler/job.ts';
import type { FireResult, SchedulerLogger } from '../../scheduler/runner.ts';
import { pauseEntryOf, pauseJobIn, resumeJobIn, sharedPausesOf } from '../views/jobs.ts';
import { readStore, type StoreReadFailure, storeFailure } from '../views/store-read.ts';

/** An action's answer: the HTTP status and the JSON body. */
export interface ActionResult {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** How long triggered runs get to settle once the dashboard stops and aborts them (as `jobs run`). */
const abortSettleMs = 5_000;

/**
 * The dashboard's actions, each recorded under the dashboard's own name (`dashboard@<host>`): a
 * triggered run is claimed in the run ledger by that instance name (its history shows it), and a
 * pause is kept with it as `by`. Triggered runs run here, in the dashboard process, through the
 * job's whole pipeline, exactly as `resil jobs run` runs them.
 */
export class DashboardActions {
  readonly #config: ResolvedConfig;
  readonly #logger: SchedulerLogger;
  readonly #running = new Set<Promise<unknown>>();
  readonly #stopping = new AbortController();

  constructor(config: ResolvedConfig, options: { instance: string; logger: SchedulerLogger }) {
    this.#config = { ...config, instance: options.instance };
    this.#logger = options.logger;
  }

  /** The name actions are recorded under. */
  get instance(): string {
    return this.#config.instance;
  }

  /**
   * Runs the job now, recorded as a manual run by the dashboard's name, with `reason` when given.
   * Answers once the run started (202, with its occurrence and token) or once it
   * was decided not to run: 409 while the job is paused (resume it first: a dashboard does not
   * force) or while another occurrence holds its lock, 503 when the store is unreachable. The run
   * goes on after the answer; its end is in the run ledger and in the dashboard's log.
   */
  async trigger(job: ResolvedJob, reason?: string): Promise<ActionResult> {
    if (this.#stopping.signal.aborted) return { status: 503, body: { error: 'the dashboard is stopping' } };
    const { store } = this.#config;
    if (hasJobPauses(store)) {
      const read = await readStore(store, () => store.pauseOf(job.name, { key: ledgerKeyOf(job) }));
      if (!read.ok) return storeFailed(read);
      if (read.value !== undefined) {
        return {
          status: 409,
          body: {
            error: `${job.name} is paused by ${read.value.by}: resume it first (or run it anyway with resil jobs run ${job.name} --force)`,
            job: job.name,
            pause: pauseEntryOf(read.value),
          },
        };
      }
    }
    const { runJobNow } = await import('../../scheduler/runner.ts');
    let answer!: (result: ActionResult) => void;
    const answered = new Promise<ActionResult>((resolve) => {
      answer = resolve;
    });
    const onEvent = (event: SchedulerEvent) => {
      if (event.type !== 'started') return;
      answer({
        status: 202,
        body: {
          job: job.name,
          outcome: 'running',
          scheduledAt: event.scheduledAt.toISOString(),
          instance: event.instance,
          token: event.token ?? null,
        },
      });
    };
    this.#logger.info({ action: 'trigger', job: job.name, reason }, `dashboard: triggering ${job.name}`);
    const run = runJobNow(this.#config, job.name, this.#logger, {
      signal: this.#stopping.signal,
      onEvent,
      actor: this.instance,
      ...(reason === undefined ? {} : { reason }),
    })
      .then((result) => answer(this.#resultOf(job, result)))
      .catch((error: unknown) =>
        answer({ status: 500, body: { error: describeError(error), job: job.name } }),
      )
      .finally(() => this.#running.delete(run));
    this.#running.add(run);
    return answered;
  }

  /** A run that ended before it could be answered as started: skipped, or failed before it began. */
  #resultOf(job: ResolvedJob, result: FireResult): ActionResult {
    const base = { job: job.name, outcome: result.outcome, token: result.token ?? null };
    if (result.outcome === 'success') return { status: 200, body: base };
    if (result.outcome === 'failure') {
      return { status: 200, body: { ...base, error: describeError(result.error) } };
    }
    if (result.reason === 'store-unavailable' || result.reason === 'store-setup') {
      const reason = result.error === undefined ? 'no answer' : describeError(result.error);
      return storeFailed({ ok: false, reason, notSetUp: result.reason === 'store-setup' });
    }
    const why =
      result.reason === 'overlap'
        ? `another occurrence of ${job.name} holds its lock`
        : `skipped (${result.reason ?? 'unknown reason'})`;
    return { status: 409, body: { ...base, reason: result.reason ?? null, error: why } };
  }

  /** Pauses the job fleet-wide, `by` the dashboard's name: 200, or 409 without a shared store, 503 unreachable. */
  async pause(job: ResolvedJob, reason: string | undefined): Promise<ActionResult> {
    const { ledger, refused } = this.#sharedLedger('pause');
    if (ledger === undefined) return refused;
    const by = this.instance;
    const read = await pauseJobIn(ledger, job, by, reason);
    if (!read.ok) return storeFailed(read);
    this.#logger.info({ action: 'pause', job: job.name, by, reason }, `dashboard: paused ${job.name}`);
    const pause = read.value ?? { pausedAt: Date.now(), by, reason };
    return { status: 200, body: { job: job.name, paused: true, pause: pauseEntryOf(pause) } };
  }

  /** Lifts the job's pause: 200 (also when it was not paused), or 409 without a shared store, 503 unreachable. */
  async resume(job: ResolvedJob): Promise<ActionResult> {
    const { ledger, refused } = this.#sharedLedger('resume');
    if (ledger === undefined) return refused;
    const read = await resumeJobIn(ledger, job);
    if (!read.ok) return storeFailed(read);
    this.#logger.info(
      { action: 'resume', job: job.name, by: this.instance },
      `dashboard: resumed ${job.name}`,
    );
    return {
      status: 200,
      body: {
        job: job.name,
        paused: false,
        resumed: read.value === undefined ? null : pauseEntryOf(read.value),
      },
    };
  }

  /** The store, when its pauses are the fleet's; else the 409 that says why not. */
  #sharedLedger(
    action: 'pause' | 'resume',
  ): { ledger: PausableRunLedger; refused?: never } | { ledger?: never; refused: ActionResult } {
    const shared = sharedPausesOf(this.#config.store);
    if ('ledger' in shared) return { ledger: shared.ledger };
    return {
      refused: {
        status: 409,
        body: {
          error: `${action} needs a shared store that every resil run reads, RedisLockStore, PostgresLockStore or MysqlLockStore: ${shared.why}`,
        },
      },
    };
  }

  /**
   * Aborts the signals of the runs still going (`ShutdownError`, their leases are then released)
   * and waits up to 5 s for them to settle; a run that ignores its signal is left behind, and its
   * lease expires after its ttl.
   */
  async stop(): Promise<void> {
    this.#stopping.abort(new ShutdownError('The dashboard is stopping.'));
    if (this.#running.size === 0) return;
    const settled = await withDeadline(
      Promise.allSettled([...this.#running]).then(() => true),
      abortSettleMs,
      () => false,
    );
    if (!settled) {
      this.#logger.error(
        { running: this.#running.size, abortSettleMs },
        'triggered runs ignored their aborted signal: stopping without them; their leases expire after their ttl',
      );
    }
  }
}

/** 503: `lock store unreachable: ...`, or `lock store not set up: ...` with what to do. */
function storeFailed(failure: StoreReadFailure): ActionResult {
  return { status: 503, body: { error: storeFailure(failure) } };
}
