import type { LedgerTrim, OccurrenceLease, RunLedger } from '../ledger/contract.ts';
import { provideAmbientContext } from '../pipeline/ambient.ts';
import { DerivedSignal, type ResilienceContext } from '../pipeline/context.ts';
import { Outcome } from '../pipeline/outcome.ts';
import { ResiliencePropertyKey } from '../pipeline/properties.ts';
import type { Callback, Next, ResilienceStrategy, StrategyFactory } from '../pipeline/strategy.ts';
import { delay } from '../pipeline/time.ts';
import { lockTiming } from '../strategies/lock/defaults.ts';
import { isStaleTokenError, LockLostError } from '../strategies/lock/errors.ts';
import { HeldLease } from '../strategies/lock/held-lease.ts';
import type { LockStore } from '../strategies/lock/store.ts';
import { LOCK_TOKEN } from '../strategies/lock/token.ts';
import { describeError } from './credentials.ts';

/** The longest pause between finishes of a run whose lease ran out while the store was down. */
const finishAfterLossDelay = 200;

/** A claim a fire was granted, and when (monotonic) its claim request was sent. */
export interface OccurrenceGrant {
  readonly lease: OccurrenceLease;
  readonly requestedAt: number;
}

/** The grant the occurrence-lease strategy holds while the job runs. */
export const OCCURRENCE_GRANT = new ResiliencePropertyKey<OccurrenceGrant>('resil.occurrenceGrant');

export interface OccurrenceLeaseOptions {
  readonly ledger: RunLedger;
  readonly ttlMs: number;
  /** What the finish keeps of the job's records. */
  readonly trim: LedgerTrim;
  /** Told when the run ended but the ledger could not record it before the lease ran out. */
  readonly onFinishFailed: (lease: OccurrenceLease, error: unknown, context: ResilienceContext) => void;
}

/**
 * The outermost strategy of a scheduled job: runs the rest of the pipeline under the occurrence's
 * granted lease (found in the context's properties), renews it every ttl / 3 with
 * `renewOccurrence`, aborts the job's signal with `LockLostError` when a renewal is refused
 * (taken over, or cancelled by `cancel-other`), and finishes the occurrence in the ledger with the
 * run's outcome, fenced by the lease's token (a refused finish turns the outcome into
 * `StaleTokenError`). A finish that hits a store error is retried, still renewing, while the lease
 * is valid, then every 200 ms at most for one more ttl (the store refuses it as stale once another
 * instance took the occurrence over); after that the run is reported as not recorded.
 */
export function occurrenceLeaseStrategy(options: OccurrenceLeaseOptions): StrategyFactory<never> {
  // Before build(): a pipeline enters the ambient context (usesAmbientContext) once it is provided.
  provideAmbientContext();
  return {
    name: 'occurrence-lease',
    create: (environment): ResilienceStrategy => ({
      // A job's run() reads its fencing token with getLockToken(), from the ambient context.
      usesAmbientContext: true,
      async execute<T>(
        callback: Callback<T>,
        context: ResilienceContext,
        next: Next,
      ): Promise<Outcome<T, unknown>> {
        const grant = context.properties.get(OCCURRENCE_GRANT);
        if (grant === undefined) return next(callback, context);
        const { lease } = grant;
        const { ledger, ttlMs } = options;
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
          grant.requestedAt,
        );
        try {
          let outcome: Outcome<T, unknown>;
          try {
            outcome = await next(callback, inner);
          } finally {
            signal.dispose();
          }
          const lost = held.lostError;
          if (lost !== undefined && !outcome.ok) {
            outcome = Outcome.failure(
              outcome.error === lost ? lost : new LockLostError(lease.key, { cause: outcome.error }),
            );
          }
          const result = outcome.ok
            ? { outcome: 'success' as const }
            : { outcome: 'failure' as const, error: describeError(outcome.error) };
          let retryDelay: number = lockTiming.pollInitialDelay;
          let lostAt: number | undefined;
          const time = environment.timeProvider;
          for (;;) {
            try {
              await ledger.finishOccurrence(lease, result, options.trim);
              return outcome;
            } catch (error) {
              // A later claim of this occurrence holds a higher token: this run's lease was lost.
              if (isStaleTokenError(error)) {
                return Outcome.failure(
                  held.lostError === undefined ? error : new LockLostError(lease.key, { cause: error }),
                );
              }
              // The lease ran out while the store did not answer (an outage longer than the ttl):
              // the run is over, and until another instance takes the occurrence over (the store
              // then refuses this finish as stale) its record is still this run's to write. Asked
              // at a quicker pace for one more ttl, so that the run is recorded, not run again.
              if (held.lostError !== undefined) {
                lostAt ??= time.monotonic();
                if (time.monotonic() - lostAt >= ttlMs) {
                  options.onFinishFailed(lease, error, context);
                  return outcome;
                }
                retryDelay = Math.min(retryDelay, finishAfterLossDelay);
              }
              await delay(time, retryDelay);
              retryDelay = Math.min(
                retryDelay * 2,
                held.lostError === undefined ? lockTiming.pollMaxDelay : finishAfterLossDelay,
              );
            }
          }
        } finally {
          held.stop();
        }
      },
    }),
  };
}
