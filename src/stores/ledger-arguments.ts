import type { ClaimRequest, LedgerTrim, OccurrenceLease, RunResult } from '../ledger/contract.ts';
import { checkConcurrency, ledgerTrimOf } from '../ledger/defaults.ts';
import { parseDuration } from '../pipeline/duration.ts';
import { InvalidOptionError } from '../pipeline/errors.ts';
import { checkOverlap } from './overlap-option.ts';

/**
 * The checks a SQL store makes of the run ledger's arguments before it sends any of them to the
 * database, so that a malformed call fails with `InvalidOptionError` naming the field, not as an
 * outage. `checkKey` is the store's own: what its tables can keep as a key or a job name.
 */
export type KeyCheck = (option: string, value: unknown) => string;

const maxDurationMs = Number.MAX_SAFE_INTEGER;

export function checkString(option: string, value: unknown): string {
  if (typeof value !== 'string') throw new InvalidOptionError(option, value, 'a string');
  return value;
}

export function checkEpochMs(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidOptionError(option, value, 'epoch milliseconds');
  }
  return value;
}

export function checkCount(option: string, value: number, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new InvalidOptionError(option, value, `an integer >= ${min}`);
  }
  return value;
}

/** A duration in ms from 0 (`min` 0) or 1 up, as `parseDuration` reads it. */
export function checkDurationMs(option: string, value: unknown, min: 0 | 1): number {
  return parseDuration(value as number, option, min, maxDurationMs);
}

/** The request with its durations as ms, `retentionMs` defaulted and `manual` a boolean. */
export function checkClaimRequest(
  request: ClaimRequest,
  checkKey: KeyCheck,
  defaultRetentionMs: number,
): ClaimRequest & { ttlMs: number; retentionMs: number; manual: boolean } {
  if (typeof request !== 'object' || request === null) {
    throw new InvalidOptionError('request', request, 'a ClaimRequest');
  }
  ledgerTrimOf(request);
  checkKey('request.job', request.job);
  checkKey('request.key', request.key);
  checkEpochMs('request.scheduledAt', request.scheduledAt);
  checkString('request.owner', request.owner);
  checkString('request.instance', request.instance);
  const ttlMs = checkDurationMs('request.ttlMs', request.ttlMs, 1);
  checkOverlap('request.overlap', request.overlap);
  checkConcurrency(request, 'request.concurrency');
  checkDurationMs('request.startingDeadlineMs', request.startingDeadlineMs, 0);
  // A recorded skip trims the job's records, as a finish does.
  const retentionMs = checkDurationMs('request.retentionMs', request.retentionMs ?? defaultRetentionMs, 0);
  return { ...request, ttlMs, retentionMs, manual: request.manual === true };
}

/** The lease fields renewOccurrence and finishOccurrence send to the database. */
export function checkOccurrenceLease(lease: OccurrenceLease, checkKey: KeyCheck): void {
  if (typeof lease !== 'object' || lease === null) {
    throw new InvalidOptionError('lease', lease, 'an OccurrenceLease');
  }
  checkKey('lease.job', lease.job);
  checkKey('lease.key', lease.key);
  checkString('lease.owner', lease.owner);
  checkEpochMs('lease.scheduledAt', lease.scheduledAt);
  checkOverlap('lease.overlap', lease.overlap);
  checkConcurrency(lease, 'lease.concurrency');
  if (!Number.isSafeInteger(lease.token)) {
    throw new InvalidOptionError('lease.token', lease.token, 'a fencing token (an integer)');
  }
}

/** A finish's result and trim options; the trim with `retentionMs` defaulted. */
export function checkFinish(
  result: RunResult,
  options: LedgerTrim,
  defaultRetentionMs: number,
): LedgerTrim & { retentionMs: number } {
  ledgerTrimOf(options);
  if (typeof result !== 'object' || result === null) {
    throw new InvalidOptionError('result', result, 'a RunResult');
  }
  if (result.outcome !== 'success' && result.outcome !== 'failure') {
    throw new InvalidOptionError('result.outcome', result.outcome, "'success' or 'failure'");
  }
  if (result.error !== undefined) checkString('result.error', result.error);
  const retentionMs = checkDurationMs('retentionMs', options.retentionMs ?? defaultRetentionMs, 0);
  return { ...options, retentionMs };
}
