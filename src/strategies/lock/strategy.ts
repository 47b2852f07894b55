import { provideAmbientContext } from '../../pipeline/ambient.ts';
import { DerivedSignal, type ResilienceContext } from '../../pipeline/context.ts';
import { parseDuration, parsePositiveDuration } from '../../pipeline/duration.ts';
import { checkFunction, checkOption, InvalidOptionError } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import type {
  Callback,
  Next,
  ResilienceStrategy,
  StrategyEnvironment,
  StrategyFactory,
} from '../../pipeline/strategy.ts';
import { neverAbortedSignal } from '../../pipeline/time.ts';
import { lockDefaults, lockTiming } from './defaults.ts';
import { LockLostError, LockNotAcquiredError, type StoreUnavailableError } from './errors.ts';
import { HeldLease, type LeaseSettings } from './held-lease.ts';
import { defaultLockStoreFor } from './memory-lease-store.ts';
import type { LockEventArguments, LockStoreErrorArguments, LockStrategyOptions } from './options.ts';
import { randomOwnerId } from './owner-id.ts';
import { ReleaseWakeUp } from './release-wake-up.ts';
import { isLockStore } from './store.ts';
import { LOCK_TOKEN } from './token.ts';

/** The errors a lock strategy can raise (`StoreUnavailableError` comes from distributed stores). */
export type LockStrategyError = LockNotAcquiredError | LockLostError | StoreUnavailableError;

/**
 * Runs the rest of the pipeline only while holding a lease on `key(context)`: a mutex across
 * executions, and across processes with a shared store.
 *
 * - Acquire under a random owner id; while the lock is held elsewhere, poll (50 ms, doubling up to
 *   1 s) until `wait` runs out, then fail with `LockNotAcquiredError`. A store error fails closed.
 * - Run the callback with the lease's fencing token (`getLockToken()`, `LOCK_TOKEN`).
 * - Renew every `ttl / 3`; a renewal that hits a store error is retried while the lease is valid.
 * - Lose: when the store refuses a renewal or the lease may have expired, abort the callback's
 *   signal with `LockLostError` and call `onLockLost`; a failing callback then reports `LockLostError`.
 * - Release when the callback ends, if this owner still holds the lease; a failed release is ignored.
 *
 * Not reentrant: a nested lock on the same key waits for (or fails against) the outer one.
 *
 * @example
 * new PipelineBuilder().add(lockStrategy({ key: () => 'nightly-report', ttl: '30s' }))
 */
export function lockStrategy(options: LockStrategyOptions): StrategyFactory<LockStrategyError> {
  // Before build(): a pipeline enters the ambient context (usesAmbientContext) once it is provided.
  provideAmbientContext();
  return {
    name: 'lock',
    create: (environment) => new LockStrategy(options, environment),
  };
}

class LockStrategy implements ResilienceStrategy {
  // getLockToken() without an argument reads the token from the ambient context.
  readonly usesAmbientContext = true;
  readonly #key: (context: ResilienceContext) => string;
  readonly #wait: number;
  readonly #settings: LeaseSettings;
  /** `'<ownerPrefix>/'`, or empty. */
  readonly #ownerPrefix: string;

  constructor(options: LockStrategyOptions, environment: StrategyEnvironment) {
    checkOption(
      'lock',
      options,
      typeof options === 'object' && options !== null,
      'an options object with a key function',
    );
    checkOption(
      'lock.key',
      options.key,
      typeof options.key === 'function',
      "a function returning the key, e.g. () => 'job'",
    );
    const ttl = parsePositiveDuration(options.ttl ?? lockDefaults.ttl, 'lock.ttl');
    this.#wait = parseDuration(options.wait ?? lockDefaults.wait, 'lock.wait');
    checkOption(
      'lock.store',
      options.store,
      options.store === undefined || isLockStore(options.store),
      'a LockStore with acquire, renew and release',
    );
    checkFunction('lock.onLockLost', options.onLockLost);
    checkOption(
      'lock.ownerPrefix',
      options.ownerPrefix,
      options.ownerPrefix === undefined ||
        (typeof options.ownerPrefix === 'string' && options.ownerPrefix !== ''),
      'a non-empty string',
    );
    this.#ownerPrefix = options.ownerPrefix === undefined ? '' : `${options.ownerPrefix}/`;
    this.#key = options.key;
    this.#settings = {
      store: options.store ?? defaultLockStoreFor(environment.timeProvider),
      ttl,
      renewEvery: ttl / lockTiming.renewDivisor,
      environment,
      onLockLost: options.onLockLost,
    };
  }

  async execute<T>(
    callback: Callback<T>,
    context: ResilienceContext,
    next: Next,
  ): Promise<Outcome<T, unknown>> {
    let key: string;
    try {
      key = this.#key(context);
    } catch (error) {
      // Fail closed: without a key there is no lock, so the callback must not run.
      return Outcome.failure(error);
    }
    if (typeof key !== 'string' || key === '') {
      return Outcome.failure(new InvalidOptionError('lock.key()', key, 'a non-empty string'));
    }
    const { store, ttl, environment } = this.#settings;
    const time = environment.timeProvider;
    const owner = this.#ownerPrefix + randomOwnerId();
    let requestedAt = time.monotonic();
    let token: number | undefined;
    try {
      token = await store.acquire(key, owner, ttl);
    } catch (error) {
      return Outcome.failure(error);
    }
    // `== null`: a custom store may answer null for "held" (a SQL NULL, a Lua nil).
    if (token == null) {
      const acquired = await this.#waitForLock(key, owner, context, requestedAt);
      if (acquired instanceof WaitFailure) return Outcome.failure(acquired.error);
      token = acquired.token;
      requestedAt = acquired.requestedAt;
    }

    const signal = new DerivedSignal(context);
    const inner = context.derive(signal);
    inner.properties.set(LOCK_TOKEN, token);
    const lease = new HeldLease(this.#settings, key, owner, context, signal, requestedAt);
    let outcome: Outcome<T, unknown>;
    try {
      outcome = await next(callback, inner);
    } finally {
      lease.stop();
      signal.dispose();
      if (!lease.refused) await this.#release(key, owner, context);
      if (lease.lossHandled) await lease.lossHandled;
    }
    const lost = lease.lostError;
    if (lost === undefined || outcome.ok) return outcome;
    return Outcome.failure(outcome.error === lost ? lost : new LockLostError(key, { cause: outcome.error }));
  }

  /**
   * Polls until the lock is free or `wait` (counted from the first attempt) runs out. A store with
   * `onRelease` wakes the waiter when the lease is released, for an attempt at once; the polls
   * keep their cadence, so a lost notification only costs the next poll.
   */
  async #waitForLock(
    key: string,
    owner: string,
    context: ResilienceContext,
    startedAt: number,
  ): Promise<{ token: number; requestedAt: number } | WaitFailure> {
    const { store, ttl, environment } = this.#settings;
    const time = environment.timeProvider;
    const deadline = startedAt + this.#wait;
    let signal: AbortSignal | undefined;
    let wakeUp: ReleaseWakeUp | undefined;
    let pollDelay: number = lockTiming.pollInitialDelay;
    try {
      for (;;) {
        const remaining = deadline - time.monotonic();
        if (remaining <= 0) break;
        // Read only now: a derived context creates its signal on first read, and fail-fast locks
        // never wait (nor subscribe).
        signal ??= context.signal;
        wakeUp ??= new ReleaseWakeUp(store, key);
        try {
          await wakeUp.sleep(time, Math.min(pollDelay, remaining), signal);
        } catch (reason) {
          return new WaitFailure(reason);
        }
        // An attempt on a notification is an extra one: the poll cadence goes on where it was.
        if (!wakeUp.consume()) pollDelay = Math.min(pollDelay * 2, lockTiming.pollMaxDelay);
        const requestedAt = time.monotonic();
        try {
          const token = await untilAborted(store.acquire(key, owner, ttl), signal, (late) => {
            // The caller gave up while the request was in flight: hand back what it won.
            if (late != null) this.#release(key, owner, context);
          });
          if (token != null) return { token, requestedAt };
        } catch (error) {
          return new WaitFailure(error);
        }
      }
    } finally {
      wakeUp?.close();
    }
    const args: LockEventArguments = { context, key };
    environment.report('OnLockRejected', context, args);
    return new WaitFailure(new LockNotAcquiredError(key));
  }

  /** Releases the lease if `owner` still holds it. Never throws: the lease expires anyway. */
  async #release(key: string, owner: string, context: ResilienceContext): Promise<void> {
    try {
      await this.#settings.store.release(key, owner);
    } catch (error) {
      const args: LockStoreErrorArguments = { context, key, error };
      this.#settings.environment.report('OnLockReleaseFailed', context, args);
    }
  }
}

class WaitFailure {
  constructor(readonly error: unknown) {}
}

/**
 * `promise`, or a rejection with `signal.reason` as soon as `signal` aborts. `onLate` receives
 * the value if the promise settles after the abort.
 */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal, onLate: (value: T) => void): Promise<T> {
  if (signal === neverAbortedSignal) return promise;
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      promise.then(onLate, () => {});
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
