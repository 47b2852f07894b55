import type { DerivedSignal, ResilienceContext } from '../../pipeline/context.ts';
import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import type { TimerHandle } from '../../pipeline/time.ts';
import { lockTiming } from './defaults.ts';
import { LockLostError } from './errors.ts';
import type { LockEventArguments, LockStoreErrorArguments, LockStrategyOptions } from './options.ts';
import type { LockStore } from './store.ts';

/** What every lease of one lock strategy shares. */
export interface LeaseSettings {
  readonly store: LockStore;
  readonly ttl: number;
  readonly renewEvery: number;
  readonly environment: StrategyEnvironment;
  readonly onLockLost: LockStrategyOptions['onLockLost'];
}

/**
 * Keeps one acquired lease alive while the callback runs: renews it every `ttl / 3`, retries a
 * renewal that hit a store error while the lease is still valid, and declares it lost when the
 * store refuses a renewal or the lease may have expired.
 *
 * Validity is a conservative local estimate on the monotonic clock, counted from the moment the
 * last successful acquire or renew request was *sent*: the store set the expiry no earlier than
 * that, so the holder never believes in a lease longer than the store does.
 *
 * At most one timer is pending at a time: the next renewal, the next retry, or, while a renewal
 * request is in flight, the expiry of the estimate.
 */
export class HeldLease {
  /** Set once the lease is lost; also the abort reason of the callback's signal. */
  lostError: LockLostError | undefined;
  /** True when the store refused a renewal: the lease belongs to someone else, so no release. */
  refused = false;
  /** Settles when `onLockLost` has returned (errors ignored). */
  lossHandled: Promise<void> | undefined;

  readonly #settings: LeaseSettings;
  readonly #key: string;
  readonly #owner: string;
  readonly #context: ResilienceContext;
  readonly #signal: DerivedSignal;
  #validUntil: number;
  #timer: TimerHandle | undefined;
  #retryDelay: number = lockTiming.pollInitialDelay;
  #ended = false;

  constructor(
    settings: LeaseSettings,
    key: string,
    owner: string,
    context: ResilienceContext,
    signal: DerivedSignal,
    /** Monotonic time just before the acquire request was sent. */
    requestedAt: number,
  ) {
    this.#settings = settings;
    this.#key = key;
    this.#owner = owner;
    this.#context = context;
    this.#signal = signal;
    this.#validUntil = requestedAt + settings.ttl;
    this.#scheduleRenewal(requestedAt);
  }

  /** The callback ended: no more renewals, timers or loss notifications. */
  stop(): void {
    this.#ended = true;
    this.#clearTimer();
  }

  #scheduleRenewal(lastRequestAt: number): void {
    const time = this.#settings.environment.timeProvider;
    const due = lastRequestAt + this.#settings.renewEvery - time.monotonic();
    this.#timer = time.setTimeout(() => this.#renew(), Math.max(0, due));
  }

  #renew(): void {
    this.#timer = undefined;
    if (this.#ended || this.lostError) return;
    const { store, ttl, environment } = this.#settings;
    const time = environment.timeProvider;
    const requestedAt = time.monotonic();
    const remaining = this.#validUntil - requestedAt;
    if (remaining <= 0) {
      this.#lose(false);
      return;
    }
    // A renewal that hangs must not outlive the lease: lose it when the estimate runs out.
    this.#timer = time.setTimeout(() => this.#expire(), remaining);
    let renewing: Promise<boolean>;
    try {
      renewing = store.renew(this.#key, this.#owner, ttl);
    } catch (error) {
      renewing = Promise.reject(error);
    }
    renewing.then(
      (renewed) => this.#renewed(renewed, requestedAt),
      (error: unknown) => this.#renewFailed(error),
    );
  }

  #expire(): void {
    this.#timer = undefined;
    if (!this.#ended && !this.lostError) this.#lose(false);
  }

  #renewed(renewed: boolean, requestedAt: number): void {
    if (this.#ended || this.lostError) return;
    this.#clearTimer();
    if (!renewed) {
      this.#lose(true);
      return;
    }
    this.#validUntil = requestedAt + this.#settings.ttl;
    this.#retryDelay = lockTiming.pollInitialDelay;
    this.#scheduleRenewal(requestedAt);
  }

  #renewFailed(error: unknown): void {
    if (this.#ended || this.lostError) return;
    this.#clearTimer();
    const { environment } = this.#settings;
    const args: LockStoreErrorArguments = { context: this.#context, key: this.#key, error };
    environment.report('OnLockRenewFailed', this.#context, args);
    const remaining = this.#validUntil - environment.timeProvider.monotonic();
    if (remaining <= 0) {
      this.#lose(false);
      return;
    }
    // The last retry falls on the estimate's end, where #renew declares the loss.
    this.#timer = environment.timeProvider.setTimeout(
      () => this.#renew(),
      Math.min(this.#retryDelay, remaining),
    );
    this.#retryDelay = Math.min(this.#retryDelay * 2, lockTiming.pollMaxDelay);
  }

  #lose(refused: boolean): void {
    this.#clearTimer();
    const error = new LockLostError(this.#key);
    this.lostError = error;
    this.refused = refused;
    this.#signal.abort(error);
    const args: LockEventArguments = { context: this.#context, key: this.#key };
    this.#settings.environment.report('OnLockLost', this.#context, args);
    const onLockLost = this.#settings.onLockLost;
    if (onLockLost) this.lossHandled = notify(onLockLost, args);
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    this.#settings.environment.timeProvider.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

async function notify(
  onLockLost: NonNullable<LockStrategyOptions['onLockLost']>,
  args: LockEventArguments,
): Promise<void> {
  try {
    await onLockLost(args);
  } catch {
    // The loss is already reported through the signal and the outcome; a failing hook changes nothing.
  }
}
