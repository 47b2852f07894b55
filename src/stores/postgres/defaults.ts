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
 * Run ledger decisions per transaction, and transactions in flight at once (see
 * ../call-batches.ts): a transaction of 100 decisions takes a few tens of ms and holds the row
 * locks of its keys until it commits; the ledger then holds at most 2 connections, and with the
 * one that listens for releases it leaves most of a default pool (10) to the rest.
 */
export const postgresLedgerBatchLimits = { maxBatch: 100, maxInFlight: 2 } as const;
