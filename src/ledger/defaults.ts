import { InvalidOptionError } from '../pipeline/errors.ts';
import { wholeNumber } from '../pipeline/whole-number.ts';
import type { LedgerTrim } from './contract.ts';

/**
 * The run ledger's defaults and messages, each written once: every store and the decisions
 * (decide.ts) take them from here.
 */

/**
 * How many of its latest records a job keeps by default, more while they are inside their window
 * (see {@link LedgerTrim}): its recent history, as `resil jobs history` shows it.
 */
export const ledgerRecordLimit = 100;
export const ledgerDefaultRetentionMs = 7 * 86_400_000;
export const ledgerDefaultKeepWithinMs = 60_000;
/** The largest `recordLimit`: well inside what every store counts in (PostgreSQL's `int`). */
export const maxLedgerRecordLimit = 1_000_000;
/** `recordLimit` and `keepWithinMs` checked for a store: whole numbers >= 1 and >= 0. */
export function ledgerTrimOf(options: LedgerTrim): { recordLimit: number; keepWithinMs: number } {
  const recordLimit = options.recordLimit ?? ledgerRecordLimit;
  if (!Number.isSafeInteger(recordLimit) || recordLimit < 1 || recordLimit > maxLedgerRecordLimit) {
    throw new InvalidOptionError('recordLimit', recordLimit, 'a whole number from 1 to 1,000,000');
  }
  const keepWithinMs = options.keepWithinMs ?? ledgerDefaultKeepWithinMs;
  if (!(keepWithinMs >= 0) || !Number.isFinite(keepWithinMs)) {
    throw new InvalidOptionError('keepWithinMs', keepWithinMs, 'a number of ms >= 0');
  }
  return { recordLimit, keepWithinMs };
}

/**
 * A claim's (or a lease's) `concurrency` checked: undefined (1) or a whole number >= 1, and 1 for
 * `allow-all`, which runs every occurrence.
 */
export function checkConcurrency(
  options: { readonly overlap: unknown; readonly concurrency?: unknown },
  option = 'concurrency',
): number {
  if (options.concurrency === undefined) return 1;
  const concurrency = wholeNumber(options.concurrency, option, 1);
  if (options.overlap === 'allow-all' && concurrency !== 1) {
    throw new InvalidOptionError(option, concurrency, "1 with overlap 'allow-all' (it bounds nothing)");
  }
  return concurrency;
}

/** The failure messages of an occurrence the ledger ends itself. */
export const ledgerMessages = {
  abandoned:
    'abandoned: its holder stopped renewing the lease and no instance took it over before the deadline',
  cancelled: 'cancelled: a newer occurrence replaced it (overlap: cancel-other)',
} as const;
