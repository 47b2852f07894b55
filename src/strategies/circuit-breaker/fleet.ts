import { ResilienceContext } from '../../pipeline/context.ts';
import { parseDuration } from '../../pipeline/duration.ts';
import { checkOption, InvalidOptionError, type ResilienceError } from '../../pipeline/errors.ts';
import type { Outcome } from '../../pipeline/outcome.ts';
import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import { type TimerHandle, withDeadline } from '../../pipeline/time.ts';
import { StoreUnavailableError } from '../lock/errors.ts';
import type { CircuitBehavior } from './behavior.ts';
import { CircuitController } from './controller.ts';
import { circuitBreakerDefaults } from './defaults.ts';
import { BrokenCircuitError, IsolatedCircuitError } from './errors.ts';
import type { HealthInfo } from './health-metrics.ts';
import type { CircuitState } from './options.ts';
import type {
  CircuitProbeClaim,
  CircuitSync,
  CircuitSyncReply,
  CircuitTransition,
  LocalCircuitBreaker,
  SharedCircuitState,
  SharedCircuits,
} from './shared.ts';

/** How a breaker with a `store` shares its circuit. A test pins each of them. */
export const sharedCircuitDefaults = {
  /** ms between two syncs (counts out, fleet state in) of one breaker while it is in use. */
  syncInterval: 250,
  /** ms between two attempts to reach a store that failed, while on the local breaker. */
  retryInterval: 1_000,
  /** ms a sync or a probe claim may take before the store counts as unreachable. */
  timeout: 1_000,
  /** ms without a call after which a breaker stops syncing; its next call starts it again. */
  idleAfter: 60_000,
} as const;

/** Arguments of the `OnCircuitStoreUnavailable` telemetry event. */
export interface OnCircuitStoreUnavailableArguments {
  readonly context: ResilienceContext;
  /** The breaker's `key`. */
  readonly key: string;
  /** Why the sync or the probe claim failed. */
  readonly error: unknown;
}

/** Arguments of the `OnCircuitStoreRestored` telemetry event. */
export interface OnCircuitStoreRestoredArguments {
  readonly context: ResilienceContext;
  readonly key: string;
}

const ignore = () => {};

/**
 * Wraps the local behavior: every outcome is counted for the next sync as well as locally. While
 * the store is reachable the fleet decides when the circuit breaks (the local counts only keep the
 * local breaker warm for an outage); while it is not, the local behavior does, as without a store.
 */
class SharedBehavior implements CircuitBehavior {
  successes = 0;
  failures = 0;
  /** The fleet's counts as of the last sync. */
  fleet: HealthInfo = { throughput: 0, failureRate: 0, failureCount: 0 };
  shared = false;

  constructor(
    readonly local: CircuitBehavior,
    readonly failureRatio: number,
    readonly minimumThroughput: number,
  ) {}

  /** Called when the counts not synced yet may break the circuit: the controller syncs at once. */
  mayBreak: () => void = ignore;

  onUnhandledOutcome(state: CircuitState): void {
    this.successes++;
    this.local.onUnhandledOutcome(state);
  }

  onHandledOutcome(state: CircuitState): boolean {
    const breaks = this.local.onHandledOutcome(state);
    // As the ratio behavior counts: a failed probe re-opens the circuit and is not sampled.
    if (state !== 'half-open') this.failures++;
    if (!this.shared) return breaks;
    // The counts not synced yet may tip the fleet's ratio: sync now rather than at the next tick.
    if (state === 'closed' && this.reached(this.fleet, this.successes, this.failures)) this.mayBreak();
    return false;
  }

  /** The failure-ratio rule (FailureRatioBehavior's), over the fleet's counts plus `successes` and `failures`. */
  reached(fleet: HealthInfo, successes = 0, failures = 0): boolean {
    const throughput = fleet.throughput + successes + failures;
    const failed = fleet.failureCount + failures;
    return throughput >= this.minimumThroughput && failed >= this.failureRatio * throughput;
  }

  onCircuitClosed(): void {
    this.local.onCircuitClosed();
  }

  healthInfo(): HealthInfo {
    return this.shared ? this.fleet : this.local.healthInfo();
  }
}

let instances = 0;

/**
 * The circuit of a breaker given a `store` (see `CircuitBreakerStrategyOptions.store`), made by the
 * store's `sharedCircuitBreaker()` on its {@link SharedCircuits}, so that only a store brings this
 * file into a bundle. It is the local circuit, with the fleet's state applied to it:
 *
 * - Calls on a closed circuit count their outcome in memory, nothing more. A timer (the pipeline's
 *   TimeProvider, unref'd) syncs every {@link sharedCircuitDefaults.syncInterval} ms while the
 *   breaker is in use: one round trip adds the counts to the store's and reads the circuit back.
 *   When the fleet's counts reach the ratio, the instance whose sync saw it asks the store to open
 *   the circuit; an instance that sees the circuit open (or closed, or isolated) in a reply makes
 *   the same transition locally, with its usual events.
 * - After the break, the first call here that finds it over claims the probe lease in the store:
 *   the one instance that gets it runs the call as the fleet's probe; the others reject. The probe's
 *   outcome goes to the store with the next sync, at once.
 * - A failed sync or claim (an error, or no answer within {@link sharedCircuitDefaults.timeout})
 *   leaves the breaker on its own counts, as without a store, reported once as
 *   `OnCircuitStoreUnavailable`; it retries every {@link sharedCircuitDefaults.retryInterval} ms and
 *   reports `OnCircuitStoreRestored` when a sync succeeds again, from when the fleet's state applies.
 *
 * @example
 * // in a store of your own, with syncCircuit() and claimProbe()
 * sharedCircuitBreaker(breaker: LocalCircuitBreaker) { return new SharedCircuitBreaker(breaker, this); }
 */
export class SharedCircuitBreaker extends CircuitController {
  readonly #circuits: SharedCircuits;
  readonly #key: string;
  readonly #owner: string;
  readonly #environment: StrategyEnvironment;
  readonly #behavior: SharedBehavior;
  readonly #samplingDuration: number;
  readonly #breakDuration: number;
  /** True while the store answers; false before the first answer and during an outage. */
  #shared = false;
  /** Whether an outage was reported (so it is reported once, and its end too). */
  #outage = false;
  /** Set by each call; the timer stops after {@link sharedCircuitDefaults.idleAfter} without one. */
  #used = true;
  #idleFor = 0;
  #timer: TimerHandle | undefined;
  #syncing = false;
  #syncAgain = false;
  /** A transition to hand the store, kept until a sync delivers it. */
  #transition: { readonly kind: CircuitTransition; readonly breakDuration: number } | undefined;
  /** The last generation of the fleet's circuit applied here. */
  #generation = -1;
  /** Monotonic instant from which this instance may claim the probe (the local twin of the break). */
  #probeAt = 0;
  /** The claim started by the last admit(), for the probe's takeEvent(). */
  #claim: Promise<void> | undefined;
  #claiming = false;
  /** The claim was lost: the strategy's releaseProbe() for it is a no-op. */
  #claimLost = false;
  /** This instance holds the fleet's probe lease (half-open here). */
  #probing = false;
  /** Set while a transition learned from the store is applied: it is not handed back to the store. */
  #applying = false;

  constructor(breaker: LocalCircuitBreaker, circuits: SharedCircuits) {
    const { breakDuration, behavior, options, environment } = breaker;
    const { store, key } = options;
    checkOption(
      'circuitBreaker.store',
      store,
      typeof circuits?.syncCircuit === 'function' && typeof circuits.claimProbe === 'function',
      'a store that shares circuits: MemoryLockStore, RedisLockStore, PostgresLockStore, MysqlLockStore (syncCircuit and claimProbe)',
    );
    checkOption('circuitBreaker.key', key, typeof key === 'string' && key.length > 0, 'a non-empty string');
    // A key the store cannot keep (a `}` on Redis, over 1000 bytes) fails here, not at every sync.
    circuits.checkKey?.(key!);
    if (options.consecutiveFailures !== undefined) {
      throw new InvalidOptionError(
        'circuitBreaker.consecutiveFailures',
        options.consecutiveFailures,
        'no value with a store: a shared circuit breaks on the failure ratio of the whole fleet (failureRatio, minimumThroughput, samplingDuration)',
      );
    }
    const shared = new SharedBehavior(
      behavior,
      options.failureRatio ?? circuitBreakerDefaults.failureRatio,
      options.minimumThroughput ?? circuitBreakerDefaults.minimumThroughput,
    );
    super(breakDuration, shared, options, environment);
    shared.mayBreak = () => this.#sync();
    this.#circuits = circuits;
    this.#key = key!;
    this.#behavior = shared;
    this.#environment = environment;
    this.#breakDuration = breakDuration;
    this.#samplingDuration = parseDuration(
      options.samplingDuration ?? circuitBreakerDefaults.samplingDuration,
      'circuitBreaker.samplingDuration',
    );
    this.#owner = `${Math.random().toString(36).slice(2, 10)}-${(++instances).toString(36)}`;
    // Learn the fleet's state before the first call.
    this.#sync();
    this.#schedule(sharedCircuitDefaults.syncInterval);
  }

  override admit(context: ResilienceContext): boolean | ResilienceError {
    this.#used = true;
    if (this.#timer === undefined) this.#schedule(0);
    if (!this.#shared || this.state !== 'open') return super.admit(context);
    const now = this.#environment.timeProvider.monotonic();
    if (this.#claiming || now < this.#probeAt) {
      const last = this.lastHandledOutcome;
      const cause = last?.ok === false ? last.error : undefined;
      return new BrokenCircuitError(
        Math.max(1, Math.ceil(this.#probeAt - now)),
        cause === undefined ? {} : { cause },
      );
    }
    this.#claiming = true;
    this.#claim = this.#claimProbe(context);
    return true;
  }

  override takeEvent(): Promise<void> | undefined {
    const claim = this.#claim;
    if (claim === undefined) return super.takeEvent();
    this.#claim = undefined;
    return claim;
  }

  override releaseProbe(): void {
    if (this.#claimLost) this.#claimLost = false;
    else super.releaseProbe();
  }

  override open(
    outcome: Outcome<unknown, unknown> | undefined,
    context: ResilienceContext,
    breakDuration = this.breakFor(context),
  ): Promise<void> | undefined {
    if (!this.#applying) {
      // Only a failed probe opens the circuit here while shared; its lease makes it the fleet's.
      if (this.#probing) this.#handOver('reopen', breakDuration);
      this.#probing = false;
    }
    this.#probeAt = this.#environment.timeProvider.monotonic() + breakDuration;
    return super.open(outcome, context, breakDuration);
  }

  override shut(
    outcome: Outcome<unknown, unknown> | undefined,
    isManual: boolean,
    context: ResilienceContext,
  ): Promise<void> | undefined {
    if (!this.#applying) {
      if (isManual) this.#handOver('reset');
      else if (this.#probing) this.#handOver('close');
      this.#probing = false;
    }
    return super.shut(outcome, isManual, context);
  }

  override isolate(context: ResilienceContext): Promise<void> {
    if (!this.#applying) {
      this.#handOver('isolate');
      this.#probing = false;
    }
    return super.isolate(context);
  }

  /** Queues `transition` for the store (a manual one also while it is unreachable) and syncs at once. */
  #handOver(transition: CircuitTransition, breakDuration = 0): void {
    this.#transition = { kind: transition, breakDuration };
    this.#sync();
  }

  async #claimProbe(context: ResilienceContext): Promise<void> {
    try {
      let claim: CircuitProbeClaim | undefined;
      try {
        claim = await this.#bounded(
          this.#circuits.claimProbe(this.#key, { owner: this.#owner, leaseMs: this.#breakDuration }),
        );
      } catch (error) {
        // The store failed us: the local breaker decides, and this call is its probe.
        this.#unavailable(error);
      }
      if (claim !== undefined && !claim.claimed) {
        this.#restored();
        if (this.#transition === undefined) this.#apply(claim, false);
        if (this.state === 'closed') return; // closed meanwhile: the call runs as any other
        this.#claimLost = true;
        if (this.state === 'isolated') throw new IsolatedCircuitError();
        // Not before the next sync: the probe's outcome comes with one.
        const { syncInterval } = sharedCircuitDefaults;
        const next = this.#environment.timeProvider.monotonic() + syncInterval;
        if (this.#probeAt < next) this.#probeAt = next;
        throw new BrokenCircuitError(Math.max(1, Math.ceil(claim.retryAfter)));
      }
      if (claim !== undefined) {
        this.#restored();
        this.#probing = true;
      }
      // Now half-open here (the local break is over: #probeAt is its twin), with onHalfOpened.
      const admitted = super.admit(context);
      if (admitted !== true) {
        // The circuit moved while the claim was on its way: closed (run the call) or open again.
        this.#probing = false;
        if (admitted === false) return;
        this.#claimLost = true;
        throw admitted;
      }
      await super.takeEvent();
    } finally {
      this.#claiming = false;
    }
  }

  /** One sync: counts and any transition out, the fleet's circuit in. Coalesced while one is on the way. */
  #sync(): void {
    if (this.#syncing) {
      this.#syncAgain = true;
      return;
    }
    const behavior = this.#behavior;
    const transition = this.#transition;
    const { successes, failures } = behavior;
    behavior.successes = 0;
    behavior.failures = 0;
    const sync: CircuitSync = {
      owner: this.#owner,
      successes,
      failures,
      samplingDuration: this.#samplingDuration,
      transition: transition?.kind,
      breakDuration: transition?.breakDuration ?? 0,
      generation: this.#generation,
    };
    this.#syncing = true;
    let sent: Promise<CircuitSyncReply>;
    try {
      sent = this.#bounded(this.#circuits.syncCircuit(this.#key, sync));
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent
      .then(
        (reply) => {
          if (this.#transition === transition) this.#transition = undefined;
          this.#restored();
          const throughput = reply.successes + reply.failures;
          behavior.fleet = {
            throughput,
            failureCount: reply.failures,
            failureRate: throughput === 0 ? 0 : reply.failures / throughput,
          };
          // A transition made here since this sync left is newer than its reply: the next sync carries it.
          if (this.#transition !== undefined) return;
          this.#apply(reply, transition !== undefined);
          // Polly's rule, on the fleet's counts: a failure that brings the ratio to failureRatio
          // over at least minimumThroughput outcomes breaks the circuit. The store opens it only if
          // it is still closed at this generation, so instances deciding at once open it once.
          if (failures > 0 && reply.state === 'closed' && behavior.reached(behavior.fleet)) {
            this.#handOver('open', this.breakFor(new ResilienceContext()));
          }
        },
        (error: unknown) => this.#unavailable(error),
      )
      .finally(() => {
        this.#syncing = false;
        if (this.#syncAgain) {
          this.#syncAgain = false;
          this.#sync();
        }
      })
      // A background sync has no caller to fail: nothing it does may become an unhandled rejection.
      .catch(ignore);
  }

  #bounded<T>(work: Promise<T>): Promise<T> {
    const { timeout } = sharedCircuitDefaults;
    return withDeadline(
      work,
      timeout,
      () => {
        throw new StoreUnavailableError(`The store did not answer within ${timeout} ms.`);
      },
      this.#environment.timeProvider,
    );
  }

  /**
   * Makes the local circuit what the store says the fleet's is. `own`: the reply to a sync that
   * carried a transition made here, already made locally.
   */
  #apply(fleet: SharedCircuitState, own: boolean): void {
    const state = this.state;
    const context = new ResilienceContext();
    this.#applying = true;
    try {
      if (fleet.state === 'closed') {
        this.#probing = false;
        if (state !== 'closed') this.shut(undefined, false, context)?.catch(ignore);
      } else if (fleet.state === 'isolated') {
        this.#probing = false;
        if (state !== 'isolated') this.isolate(context).catch(ignore);
      } else if (state === 'half-open' && this.#probing && fleet.generation === this.#generation) {
        // Our own probe is running under the lease.
      } else if (state !== 'open' || (fleet.generation !== this.#generation && !own)) {
        this.#probing = false;
        this.open(undefined, context, fleet.retryAfter)?.catch(ignore);
      } else {
        this.#probeAt = this.#environment.timeProvider.monotonic() + fleet.retryAfter;
      }
    } finally {
      this.#applying = false;
    }
    this.#generation = fleet.generation;
  }

  #unavailable(error: unknown): void {
    this.#shared = false;
    this.#behavior.shared = false;
    this.#probing = false;
    if (this.#outage) return;
    this.#outage = true;
    const context = new ResilienceContext();
    const args: OnCircuitStoreUnavailableArguments = { context, key: this.#key, error };
    this.#environment.report('OnCircuitStoreUnavailable', context, args);
  }

  #restored(): void {
    if (this.#shared) return;
    this.#shared = true;
    this.#behavior.shared = true;
    if (!this.#outage) return;
    this.#outage = false;
    const context = new ResilienceContext();
    const args: OnCircuitStoreRestoredArguments = { context, key: this.#key };
    this.#environment.report('OnCircuitStoreRestored', context, args);
  }

  /**
   * The next tick. The timer holds the controller weakly: a pipeline dropped by its owner stops
   * syncing at its next tick, and an idle one after {@link sharedCircuitDefaults.idleAfter}.
   */
  #schedule(ms: number): void {
    const controller = new WeakRef(this);
    const timer = this.#environment.timeProvider.setTimeout(() => {
      const live = controller.deref();
      if (live !== undefined) live.#tick();
    }, ms);
    (timer as { unref?: () => void } | undefined)?.unref?.();
    this.#timer = timer;
  }

  #tick(): void {
    this.#timer = undefined;
    const interval = this.#shared ? sharedCircuitDefaults.syncInterval : sharedCircuitDefaults.retryInterval;
    const behavior = this.#behavior;
    if (this.#used || behavior.successes + behavior.failures > 0 || this.#transition !== undefined) {
      this.#idleFor = 0;
    } else {
      this.#idleFor += interval;
      if (this.#idleFor >= sharedCircuitDefaults.idleAfter) return;
    }
    this.#used = false;
    this.#sync();
    this.#schedule(interval);
  }
}
