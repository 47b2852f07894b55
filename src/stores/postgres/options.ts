import type { Duration } from '../../pipeline/duration.ts';

/** Where the store's tables live. The fencing helpers take the same two options. */
export interface PostgresTableOptions {
  /**
   * Base name of the tables. The store uses `<table>` (leases), `<table>_occurrences` with the
   * functions `<table>_claim`, `<table>_renew`, `<table>_finish` (run ledger) and `<table>_fences`
   * (fencing helper). Any name up to 50 bytes; it is always quoted, so it is case-sensitive.
   * Defaults to `'resil_locks'`.
   */
  table?: string;
  /** Schema of the tables. Defaults to none: the connection's `search_path` decides (usually `public`). */
  schema?: string;
}

export interface PostgresLockStoreOptions extends PostgresTableOptions {
  /**
   * Create the tables on first use when they are missing (idempotent, safe when several
   * processes start at once). Turn it off when the database user may not run DDL, and create them
   * with the SQL from `postgresLockStoreSql()`. Defaults to true.
   */
  createTable?: boolean;
  /**
   * Bound on each store operation, waiting for a pooled connection included. When it runs out the
   * operation fails with `StoreUnavailableError` (the lock fails closed). Also set the pool's
   * `connectionTimeoutMillis` so connections to an unreachable server are given up, not left
   * pending. Defaults to 5 s.
   */
  timeout?: Duration;
}
