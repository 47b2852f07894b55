import { runRecordOf, type StoredRunRecord } from './contract.ts';
import type { LedgerEntry } from './decide.ts';

/**
 * A {@link LedgerEntry} as a store keeps it: numbers maybe as decimal strings (the Redis store's
 * JSON records: a token has 16 digits, more than some JSON readers keep), absent fields maybe
 * `null` (a PostgreSQL row). {@link storedEntryOf} writes the strings, {@link ledgerEntryOf} reads
 * either.
 */
export interface StoredLedgerEntry extends StoredRunRecord {
  readonly owner?: string | null;
  readonly expiresAt?: number | string | null;
  readonly cancelled?: boolean | null;
  readonly queuedUntil?: number | string | null;
}

export function ledgerEntryOf(stored: StoredLedgerEntry): LedgerEntry {
  const entry: { -readonly [K in keyof LedgerEntry]: LedgerEntry[K] } = runRecordOf(stored);
  if (stored.owner != null) entry.owner = stored.owner;
  if (stored.expiresAt != null) entry.expiresAt = Number(stored.expiresAt);
  if (stored.cancelled === true) entry.cancelled = true;
  if (stored.queuedUntil != null) entry.queuedUntil = Number(stored.queuedUntil);
  return entry;
}

export function storedEntryOf(entry: LedgerEntry): StoredLedgerEntry {
  const stored: Record<string, string | boolean> = {};
  for (const [name, value] of Object.entries(entry)) {
    if (value === undefined) continue;
    stored[name] = typeof value === 'number' ? String(value) : value;
  }
  return stored as unknown as StoredLedgerEntry;
}
