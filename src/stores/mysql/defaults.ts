/** MysqlLockStore defaults. A test pins each of them. */
export const mysqlLockStoreDefaults = {
  /** Base name of the store's tables: `resil_locks`, `resil_locks_occurrences`, ... */
  table: 'resil_locks',
  /** Namespace of every key, job's key and instance the store keeps: none. */
  prefix: '',
  createTable: true,
  /** Bound on one store operation, waiting for a pooled connection included. */
  timeout: 5_000,
  /** How long the run ledger keeps an occurrence, by its instant (7 days): trimmed on finish and on a recorded skip. */
  retentionMs: 7 * 86_400_000,
  /** How many occurrences `runHistory` returns unless told otherwise. */
  historyLimit: 20,
} as const;

/** MySQL and MariaDB identifiers are at most 64 characters. */
export const maxIdentifierLength = 64;

/** The longest prefix, in bytes of UTF-8: a key column holds the prefix and a key of up to 1000 bytes. */
export const maxPrefixBytes = 255;

/**
 * Run ledger decisions per transaction, and transactions in flight at once (see
 * ../call-batches.ts), as on PostgreSQL: a transaction of 100 decisions holds the row locks of its
 * keys for a few tens of ms, and the ledger holds at most 2 connections of the pool.
 */
export const mysqlLedgerBatchLimits = { maxBatch: 100, maxInFlight: 2 } as const;

/** How often the store reads the waited keys' leases while someone waits on one (`onRelease`). */
export const releasePollMs = 100;
