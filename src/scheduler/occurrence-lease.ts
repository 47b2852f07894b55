import { DerivedSignal, type ResilienceContext } from '../pipeline/context.ts';
import { Outcome } from '../pipeline/outcome.ts';
import { ResiliencePropertyKey } from '../pipeline/properties.ts';
import type { Callback, Next, ResilienceStrategy, StrategyFactory } from '../pipeline/strategy.ts';
import { delay } from '../pipeline/time.ts';
import { lockTiming } from '../strategies/lock/defaults.ts';
import { isStaleTokenError, LockLostError } from '../strategies/lock/errors.ts';
import { HeldLease } from '../strategies/lock/held-lease.ts';
import type { OccurrenceLease, RunLedger } from '../strategies/lock/run-ledger.ts';
import type { LockStore } from '../strategies/lock/store.ts';
import { LOCK_TOKEN } from '../strategies/lock/token.ts';
import { describeError } from './credentials.ts';

/** The claim a fire was granted; the occurrence-lease strategy holds it while the job runs. */
export const OCCURRENCE_LEASE = new ResiliencePropertyKey<OccurrenceLease>('resil.occurrenceLease');

export interface OccurrenceLeaseOptions {
  readonly ledger: RunLedger;
  readonly ttlMs: number;
  readonly retentionMs: number;
  /** Told when the run ended but the ledger could not record it (after a few tries). */
  readonly onFinishFailed: (lease: OccurrenceLease, error: unknown) => void;
}

/** How often a failed finish is retried while the lease is still ours. */
const finishAttempts = 3;

/**
 * The outermost strategy of a scheduled job: runs the rest of the pipeline under the occurrence's
 * granted lease (found in the context's properties), renews it every ttl / 3 with
 * `renewOccurrence`, aborts the job's signal with `LockLostError` when a renewal is refused
 * (taken over, or cancelled by `cancel-other`), and finishes the occurrence in the ledger with the
 * run's outcome, fenced by the lease's token (a refused finish turns the outcome into
 * `StaleTokenError`).
 */
export function occurrenceLeaseStrategy(options: OccurrenceLeaseOptions): StrategyFactory<never> {
  return {
    name: 'occurrence-lease',
    create: (environment): ResilienceStrategy => ({
      async execute<T>(
        callback: Callback<T>,
        context: ResilienceContext,
        next: Next,
      ): Promise<Outcome<T, unknown>> {
        const lease = context.properties.get(OCCURRENCE_LEASE);
        if (lease === undefined) return next(callback, context);
        const { ledger, ttlMs } = options;
        const requestedAt = environment.timeProvider.monotonic();
        const signal = new DerivedSignal(context);
        const inner = context.derive(signal);
        inner.properties.set(LOCK_TOKEN, lease.token);
        // HeldLease renews through a LockStore; this one renews the occurrence's claim.
        const store: LockStore = {
          acquire: () => Promise.resolve(undefined),
          renew: (_key, _owner, ttl) => ledger.renewOccurrence(lease, ttl),
          release: () => Promise.resolve(),
        };
        const held = new HeldLease(
          {
            store,
            ttl: ttlMs,
            renewEvery: ttlMs / lockTiming.renewDivisor,
            environment,
            onLockLost: undefined,
          },
          lease.key,
          lease.owner,
          context,
          signal,
          requestedAt,
        );
        let outcome: Outcome<T, unknown>;
        try {
          outcome = await next(callback, inner);
        } finally {
          held.stop();
          signal.dispose();
        }
        if (held.lostError !== undefined && !outcome.ok) {
          outcome = Outcome.failure(
            outcome.error === held.lostError
              ? held.lostError
              : new LockLostError(lease.key, { cause: outcome.error }),
          );
        }
        const result = outcome.ok
          ? { outcome: 'success' as const }
          : { outcome: 'failure' as const, error: describeError(outcome.error) };
        for (let attempt = 1; ; attempt++) {
          try {
            await ledger.finishOccurrence(lease, result, { retentionMs: options.retentionMs });
            return outcome;
          } catch (error) {
            // A later claim of this occurrence holds a higher token: this run's lease was lost.
            if (isStaleTokenError(error)) {
              return Outcome.failure(
                held.lostError === undefined ? error : new LockLostError(lease.key, { cause: error }),
              );
            }
            if (attempt === finishAttempts) {
              options.onFinishFailed(lease, error);
              return outcome;
            }
            await delay(environment.timeProvider, lockTiming.pollInitialDelay * 2 ** attempt).catch(() => {});
          }
        }
      },
    }),
  };
}
