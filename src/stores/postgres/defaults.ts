/** PostgresLockStore defaults. A test pins each of them. */
export const postgresLockStoreDefaults = {
  /** Base name of the store's tables: `resil_locks`, `resil_locks_runs`, ... */
  table: 'resil_locks',
  createTable: true,
  /** Bound on one store operation, connecting included. */
  timeout: 5_000,
  /** How long a completed occurrence is remembered (7 days). */
  retentionMs: 7 * 86_400_000,
  /** How many runs per job the history keeps. */
  historyLimit: 20,
} as const;

/** PostgreSQL truncates longer identifiers silently (NAMEDATALEN - 1 bytes). */
export const maxIdentifierBytes = 63;
