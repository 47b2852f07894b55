/**
 * Shared pieces of the scheduler tests: resolved jobs and configs, a logger that records lines,
 * and stores whose clock or availability a test controls.
 */

import type {
  ClaimRequest,
  ClaimResult,
  OccurrenceLease,
  RunLedger,
  RunRecord,
  RunResult,
} from '../../src/ledger/contract.ts';
import { MemoryLockStore } from '../../src/ledger/memory-store.ts';
import type { TimeProvider, TimerHandle } from '../../src/pipeline/time.ts';
import { logSchedulerEvents } from '../../src/scheduler/event-log.ts';
import type { SchedulerEvent } from '../../src/scheduler/events.ts';
import { type FireEnvironment, JobFirer, type SchedulerLogger } from '../../src/scheduler/fire.ts';
import type { JobContext, ResolvedConfig, ResolvedJob } from '../../src/scheduler/job.ts';
import { StoreClock } from '../../src/scheduler/store-clock.ts';
import { StoreUnavailableError } from '../../src/strategies/lock/errors.ts';
import type { LeaseInfo, LockStore } from '../../src/strategies/lock/store.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';

export function resolvedJob(overrides: Partial<ResolvedJob> & Pick<ResolvedJob, 'run'>): ResolvedJob {
  const name = overrides.name ?? 'report';
  return {
    name,
    schedule: '* * * * * *',
    timezone: 'UTC',
    lock: { key: name, ttlMs: 30_000, waitMs: 0 },
    timeoutMs: undefined,
    retry: false,
    enabled: true,
    catchUpMs: undefined,
    startingDeadlineMs: 60_000,
    overlap: 'skip',
    ...overrides,
  };
}

export function resolvedConfig(
  store: LockStore,
  jobs: ResolvedJob[],
  overrides: Partial<ResolvedConfig> = {},
): ResolvedConfig {
  return {
    filepath: '/virtual/resil.config.ts',
    store,
    instance: 'test-instance',
    shutdownGraceMs: 30_000,
    ledgerRetentionMs: 7 * 86_400_000,
    ledgerRecordLimit: 100,
    jobs,
    ...overrides,
  };
}

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string | undefined;
  [field: string]: unknown;
}

/** A logger that keeps every line (with its child bindings) for assertions. */
export class RecordingLogger implements SchedulerLogger {
  constructor(
    readonly lines: LogLine[] = [],
    readonly bindings: Record<string, unknown> = {},
  ) {}
  child(bindings: Record<string, unknown>): RecordingLogger {
    return new RecordingLogger(this.lines, { ...this.bindings, ...bindings });
  }
  debug(object: object | string, message?: string): void {
    this.#push('debug', object, message);
  }
  info(object: object | string, message?: string): void {
    this.#push('info', object, message);
  }
  warn(object: object | string, message?: string): void {
    this.#push('warn', object, message);
  }
  error(object: object | string, message?: string): void {
    this.#push('error', object, message);
  }
  /** The one line per fire: lines carrying an `outcome`. */
  fires(): LogLine[] {
    return this.lines.filter((line) => typeof line.outcome === 'string' && line.scheduledAt !== undefined);
  }
  #push(level: LogLine['level'], object: object | string, message?: string): void {
    if (typeof object === 'string') this.lines.push({ level, msg: object, ...this.bindings });
    else this.lines.push({ level, msg: message, ...this.bindings, ...object });
  }
}

/**
 * A MemoryLockStore seen through a store clock `skewMs` away from the instance's clock, that can
 * be taken down: every call then fails with `StoreUnavailableError` (as a dead Redis would).
 */
export class ControlledStore implements LockStore, RunLedger {
  inner: MemoryLockStore;
  /** The store's clock minus the instance's clock. */
  skewMs = 0;
  down = false;
  /** Thrown by every operation while set (a store that is not set up, a key it cannot keep). */
  failure: Error | undefined;
  /** Round trip of `now()`, in ms of the instance's time provider. */
  nowLatencyMs = 0;
  nowCalls = 0;

  constructor(readonly time: TimeProvider) {
    this.inner = this.#fresh();
  }

  /** Forgets every lease and record, as a Redis restarted without persistence does. */
  reset(): void {
    this.inner = this.#fresh();
  }

  #fresh(): MemoryLockStore {
    // The ledger judges time on the store's clock, skew included.
    const storeTime: TimeProvider = Object.create(this.time, {
      now: { value: () => this.time.now() + this.skewMs },
    });
    return new MemoryLockStore({ timeProvider: storeTime });
  }

  #check(): void {
    if (this.down) throw new StoreUnavailableError('Store unreachable (test outage).');
    if (this.failure !== undefined) throw this.failure;
  }
  async acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    this.#check();
    return this.inner.acquire(key, owner, ttlMs);
  }
  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    this.#check();
    return this.inner.renew(key, owner, ttlMs);
  }
  async release(key: string, owner: string): Promise<void> {
    this.#check();
    return this.inner.release(key, owner);
  }
  async inspect(key: string): Promise<LeaseInfo | undefined> {
    this.#check();
    return this.inner.inspect(key);
  }
  async now(): Promise<number> {
    this.nowCalls++;
    this.#check();
    if (this.nowLatencyMs > 0) {
      // The store reads its clock half-way through the round trip.
      await new Promise<void>((resolve) => this.time.setTimeout(resolve, this.nowLatencyMs / 2));
      const value = this.time.now() + this.skewMs;
      await new Promise<void>((resolve) => this.time.setTimeout(resolve, this.nowLatencyMs / 2));
      return value;
    }
    return this.time.now() + this.skewMs;
  }
  /** The store's clock right now, synchronously (for assertions). */
  clockNow(): number {
    return this.time.now() + this.skewMs;
  }
  /** Release wake-ups (`LockStore.onRelease`), only where a test turns them on: `store.onRelease = ...`. */
  onRelease?: (key: string, listener: () => void) => () => void;
  /** How many claims reached the store (a fire must never spin on them). */
  claimCalls = 0;
  async claimOccurrence(request: ClaimRequest): Promise<ClaimResult> {
    this.claimCalls++;
    this.#check();
    return this.inner.claimOccurrence(request);
  }
  async renewOccurrence(lease: OccurrenceLease, ttlMs: number): Promise<boolean> {
    this.#check();
    return this.inner.renewOccurrence(lease, ttlMs);
  }
  async finishOccurrence(
    lease: OccurrenceLease,
    result: RunResult,
    options?: { retentionMs?: number },
  ): Promise<void> {
    this.#check();
    return this.inner.finishOccurrence(lease, result, options);
  }
  async runHistory(job: string, options?: { key?: string; limit?: number }): Promise<RunRecord[]> {
    this.#check();
    return this.inner.runHistory(job, options);
  }
  async lastCompleted(job: string, options?: { key?: string }): Promise<number | undefined> {
    this.#check();
    return this.inner.lastCompleted(job, options);
  }
}

/** A job body that records each call and resolves when the test says so (or at once). */
export class JobProbe {
  readonly calls: Array<{ ctx: JobContext; startedAt: number; storeNow: number | undefined }> = [];
  #pending: Array<() => void> = [];

  constructor(
    readonly time: TimeProvider,
    readonly store?: ControlledStore,
    readonly behaviour: 'immediate' | 'hold' = 'immediate',
  ) {}

  readonly run = async (ctx: JobContext): Promise<string> => {
    this.calls.push({ ctx, startedAt: this.time.now(), storeNow: this.store?.clockNow() });
    if (this.behaviour === 'hold') {
      await new Promise<void>((resolve, reject) => {
        this.#pending.push(resolve);
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
      });
    }
    return 'done';
  };

  /** Lets every held run finish. */
  finishAll(): void {
    for (const resolve of this.#pending.splice(0)) resolve();
  }
}

/** Records `scheduledAt` of `job` as a finished success in `ledger`, as a fleet member would have. */
export async function completeOccurrence(ledger: RunLedger, job: string, scheduledAt: number): Promise<void> {
  const claim = await ledger.claimOccurrence({
    job,
    key: job,
    scheduledAt,
    owner: 'elsewhere/1',
    instance: 'x',
    ttlMs: 30_000,
    overlap: 'skip',
    startingDeadlineMs: 60_000,
    manual: true,
  });
  if (claim.status !== 'granted') throw new Error(`could not record ${job}@${scheduledAt}: ${claim.status}`);
  await ledger.finishOccurrence(claim.lease, { outcome: 'success' });
}

/**
 * A FakeTimeProvider that records every delay asked of it, and can fire timers longer than
 * `earlyByMs` that much early (as a timer on a monotonic clock running fast against the wall
 * clock would).
 */
export class RecordingTimeProvider extends FakeTimeProvider {
  readonly delays: number[] = [];
  earlyByMs = 0;

  override setTimeout(callback: () => void, ms: number): TimerHandle {
    this.delays.push(ms);
    return super.setTimeout(callback, ms > this.earlyByMs ? ms - this.earlyByMs : ms);
  }
}

/**
 * One instance of a fleet on `store`: its view of the store's clock (synced), and a firer for `job`
 * whose events go to `emit` (by default, log lines on `logger`).
 */
export async function instanceOf(
  store: ControlledStore,
  job: ResolvedJob,
  {
    name = 'a',
    logger = new RecordingLogger(),
    emit,
  }: { name?: string; logger?: RecordingLogger; emit?: (event: SchedulerEvent) => void } = {},
) {
  const clock = new StoreClock(store, store.time);
  await clock.sync();
  const environment: FireEnvironment = {
    store,
    ledger: store,
    clock,
    time: store.time,
    instance: name,
    ledgerRetentionMs: 86_400_000,
    ledgerRecordLimit: 100,
    logger,
    emit: emit ?? logSchedulerEvents(logger),
  };
  return { firer: new JobFirer(job, environment), logger, clock };
}
