/** PostgresLockStore defaults. A test pins each of them. */
export const postgresLockStoreDefaults = {
  /** Base name of the store's tables and functions: `resil_locks`, `resil_locks_occurrences`, ... */
  table: 'resil_locks',
  createTable: true,
  /** Bound on one store operation, connecting included. */
  timeout: 5_000,
  /** How long the run ledger keeps an occurrence, by its instant (7 days): trimmed on finish and on a recorded skip. */
  retentionMs: 7 * 86_400_000,
  /** How many occurrences `runHistory` returns unless told otherwise. */
  historyLimit: 20,
} as const;

/** PostgreSQL truncates longer identifiers silently (NAMEDATALEN - 1 bytes). */
export const maxIdentifierBytes = 63;

/**
 * Occurrence claims and finishes per statement, and statements in flight at once for each of the
 * two (see ../call-batches.ts): a statement of 100 claims takes a few tens of ms and holds the row
 * locks of its keys until it commits; claims and finishes then hold at most 4 connections, and
 * with the one that listens for releases they leave half of a default pool (10) to the rest.
 */
export const postgresLedgerBatchLimits = { maxBatch: 100, maxInFlight: 2 } as const;
