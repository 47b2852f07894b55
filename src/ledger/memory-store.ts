import type { StrategyEnvironment } from '../pipeline/strategy.ts';
import type { CircuitController } from '../strategies/circuit-breaker/controller.ts';
import { SharedCircuitBreaker } from '../strategies/circuit-breaker/fleet.ts';
import type {
  CircuitProbeClaim,
  CircuitSync,
  CircuitSyncReply,
  LocalCircuitBreaker,
  SharedCircuitStore,
  SharedCircuits,
} from '../strategies/circuit-breaker/shared.ts';
import { StaleTokenError } from '../strategies/lock/errors.ts';
import { MemoryLeaseStore, type MemoryLeaseStoreOptions } from '../strategies/lock/memory-lease-store.ts';
import type { RateLimiter } from '../strategies/rate-limiter/limiter.ts';
import type { RateLimiterStrategyOptions } from '../strategies/rate-limiter/options.ts';
import { SharedRateLimiter } from '../strategies/rate-limiter/shared-limiter.ts';
import {
  type ClaimRequest,
  type ClaimResult,
  checkInstanceInfo,
  type InstanceInfo,
  type InstanceRegistry,
  type JobPause,
  type LedgerTrim,
  type OccurrenceLease,
  type RegisteredInstance,
  type RunLedger,
  type RunRecord,
  type RunResult,
} from './contract.ts';
import {
  type Decision,
  decideClaim,
  decideFinish,
  decideRenew,
  type LedgerChanges,
  type LedgerEntry,
  type LedgerView,
  leaseOf,
  publicRecord,
  resolvedTrim,
  trimmed,
} from './decide.ts';
import { checkConcurrency } from './defaults.ts';
import { MemoryRateLimits } from './memory-shared-rate-limit.ts';
import { MemoryCircuits } from './shared-circuit.ts';

export type MemoryLockStoreOptions = MemoryLeaseStoreOptions;

/** One job's occurrences on one lease key. */
type JobLedger = Map<number, LedgerEntry>;

function ledgerId(key: string, job: string): string {
  return `${key}\u0000${job}`;
}

/**
 * A {@link LockStore} (and {@link RunLedger}) in this process's memory: excludes executions inside
 * one process only. Each operation runs synchronously, so it is atomic per key. It keeps one token
 * counter per key ever locked, so tokens stay monotonic across release and expiry; that is fine
 * unless your keys are unbounded. No timers: expiry is judged lazily by `timeProvider.now()`.
 *
 * The lock strategy's default store is its lease half, `MemoryLeaseStore`, one per time provider.
 *
 * @example
 * const store = new MemoryLockStore();
 * const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'rebuild-cache', store }).build();
 */
export class MemoryLockStore
  extends MemoryLeaseStore
  implements RunLedger, InstanceRegistry, SharedCircuitStore, SharedCircuits
{
  readonly #jobs = new Map<string, JobLedger>();
  readonly #pauses = new Map<string, JobPause>();
  /** Registered instances and when each expires (store clock). */
  readonly #instances = new Map<string, { info: RegisteredInstance; expiresAt: number }>();

  async claimOccurrence(request: ClaimRequest): Promise<ClaimResult> {
    const { job, key } = request;
    checkConcurrency(request);
    const { answer } = this.#decide(key, job, (view) => decideClaim(view, request));
    if (answer.status !== 'granted') return answer;
    const token = this.#ledger(key, job).get(answer.scheduledAt)!.token!;
    return {
      status: 'granted',
      takeover: answer.takeover,
      lease: leaseOf(request, answer.scheduledAt, token),
    };
  }

  async renewOccurrence(lease: OccurrenceLease, ttlMs: number): Promise<boolean> {
    return this.#decide(lease.key, lease.job, (view) => decideRenew(view, lease, ttlMs)).answer;
  }

  async finishOccurrence(lease: OccurrenceLease, result: RunResult, options: LedgerTrim = {}): Promise<void> {
    const trim = resolvedTrim(options);
    const { answer } = this.#decide(lease.key, lease.job, (view) => decideFinish(view, lease, result, trim));
    if (answer.stale) throw new StaleTokenError(lease.job, lease.token, answer.latestToken);
  }

  async runHistory(job: string, options: { key?: string; limit?: number } = {}): Promise<RunRecord[]> {
    const entries = this.#jobs.get(ledgerId(options.key ?? job, job));
    if (entries === undefined) return [];
    return [...entries.values()]
      .map(publicRecord)
      .sort((a, b) => b.scheduledAt - a.scheduledAt)
      .slice(0, options.limit ?? 20);
  }

  async lastCompleted(job: string, options: { key?: string } = {}): Promise<number | undefined> {
    const entries = this.#jobs.get(ledgerId(options.key ?? job, job));
    let latest: number | undefined;
    for (const [at, entry] of entries ?? []) {
      if (entry.outcome === 'success' && (latest === undefined || at > latest)) latest = at;
    }
    return latest;
  }

  async pauseJob(job: string, options: { key: string; by: string; reason?: string }): Promise<void> {
    const { key, by, reason } = options;
    const pause: JobPause = { pausedAt: this.time.now(), by, ...(reason === undefined ? {} : { reason }) };
    this.#pauses.set(ledgerId(key, job), pause);
  }

  async resumeJob(job: string, options: { key: string }): Promise<void> {
    this.#pauses.delete(ledgerId(options.key, job));
  }

  async pauseOf(job: string, options: { key: string }): Promise<JobPause | undefined> {
    const pause = this.#pauses.get(ledgerId(options.key, job));
    return pause === undefined ? undefined : { ...pause };
  }

  async registerInstance(info: InstanceInfo, options: { ttlMs: number }): Promise<void> {
    const now = this.time.now();
    const fields = checkInstanceInfo(info, options?.ttlMs);
    this.#instances.set(fields.instance, {
      info: { ...fields, lastSeenAt: now },
      expiresAt: now + options.ttlMs,
    });
  }

  async removeInstance(instance: string): Promise<void> {
    this.#instances.delete(instance);
  }

  async listInstances(): Promise<RegisteredInstance[]> {
    const now = this.time.now();
    const live: RegisteredInstance[] = [];
    for (const [name, { info, expiresAt }] of this.#instances) {
      if (expiresAt > now) live.push({ ...info });
      else this.#instances.delete(name);
    }
    return live.sort((a, b) => (a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : 0));
  }

  /** Shared circuit breakers (`circuitBreaker.store`) of this process: see shared-circuit.ts. */
  readonly #circuits = new MemoryCircuits(this.time);

  async syncCircuit(key: string, sync: CircuitSync): Promise<CircuitSyncReply> {
    return this.#circuits.sync(key, sync);
  }

  async claimProbe(key: string, claim: { owner: string; leaseMs: number }): Promise<CircuitProbeClaim> {
    return this.#circuits.claimProbe(key, claim);
  }

  /** A circuit breaker sharing its circuit through this store (`circuitBreaker.store`). */
  sharedCircuitBreaker(breaker: LocalCircuitBreaker): CircuitController {
    return new SharedCircuitBreaker(breaker, this);
  }
  /** A rate limit shared by the pipelines on this store, in this process (see memory-shared-rate-limit.ts). */
  sharedRateLimiter(options: RateLimiterStrategyOptions, environment: StrategyEnvironment): RateLimiter {
    this.#rateLimits ??= new MemoryRateLimits(this.time);
    return new SharedRateLimiter(options, environment, this.#rateLimits.permits());
  }
  #rateLimits: MemoryRateLimits | undefined;

  #ledger(key: string, job: string): JobLedger {
    const id = ledgerId(key, job);
    let ledger = this.#jobs.get(id);
    if (ledger === undefined) {
      ledger = new Map();
      this.#jobs.set(id, ledger);
    }
    return ledger;
  }

  /** Reads the job's view, decides, and writes the decision's changes, in one synchronous step. */
  #decide<A>(key: string, job: string, decide: (view: LedgerView) => Decision<A>): Decision<A> {
    const now = this.time.now();
    const ledger = this.#ledger(key, job);
    const live = this.live(key, now);
    const current = this.keys.get(key)?.current;
    const view: LedgerView = {
      now,
      ...(live === undefined ? {} : { lease: { owner: live.owner!, expiresAt: live.expiresAt } }),
      ...(current?.job === job ? { current: current.scheduledAt } : {}),
      paused: this.#pauses.has(ledgerId(key, job)),
      entries: ledger,
    };
    const decision = decide(view);
    this.#write(key, job, ledger, now, decision.changes);
    return decision;
  }

  #write(key: string, job: string, ledger: JobLedger, now: number, changes: LedgerChanges): void {
    const { grant, renewKey, releaseKey, trim } = changes;
    let state = this.keys.get(key);
    let token: number | undefined;
    if (grant !== undefined) {
      if (state === undefined) {
        state = { token: 0, owner: undefined, expiresAt: 0 };
        this.keys.set(key, state);
      }
      token = ++state.token;
      if (grant.holdsKey) {
        state.owner = grant.owner;
        state.expiresAt = now + grant.ttlMs;
        state.current = { job, scheduledAt: grant.scheduledAt };
      }
    }
    for (const entry of changes.put) {
      ledger.set(entry.scheduledAt, entry.scheduledAt === grant?.scheduledAt ? { ...entry, token } : entry);
    }
    if (renewKey !== undefined && state?.owner === renewKey.owner) state.expiresAt = now + renewKey.ttlMs;
    if (releaseKey !== undefined && state?.owner === releaseKey.owner) {
      state.owner = undefined;
      if (state.current?.job === job && state.current.scheduledAt === releaseKey.scheduledAt)
        state.current = undefined;
      this.notifyReleased(key);
    }
    if (trim !== undefined) for (const at of trimmed(ledger.values(), now, trim)) ledger.delete(at);
  }
}
