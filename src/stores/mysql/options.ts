import type { Duration } from '../../pipeline/duration.ts';

/** Where the store keeps things. The fencing helper takes the same two options. */
export interface MysqlTableOptions {
  /**
   * Base name of the tables: `<table>` (leases), `<table>_occurrences` (run ledger),
   * `<table>_pauses`, `<table>_instances` and `<table>_fences` (fencing helper), in the pool's
   * database. Any name up to 52 characters without NUL; it is always quoted, so it is taken
   * literally (whether case matters is the server's `lower_case_table_names`). Defaults to
   * `'resil_locks'`.
   */
  table?: string;
  /**
   * Namespace of every lock key, job's key, fenced resource and instance name the store keeps in
   * its tables, so that applications sharing the tables do not see each other's. Up to 255 bytes
   * of UTF-8. Defaults to none.
   */
  prefix?: string;
}

export interface MysqlLockStoreOptions extends MysqlTableOptions {
  /**
   * Create the tables on first use when they are missing (idempotent, safe when several processes
   * start at once), and again when dropped later. Turn it off when the database user may not run
   * DDL, and create them with the SQL from `mysqlLockStoreSql()`. Defaults to true.
   */
  createTable?: boolean;
  /**
   * Bound on each store operation, waiting for a pooled connection included. When it runs out the
   * operation fails with `StoreUnavailableError` (the lock fails closed), and one still waiting for
   * a connection is not sent. Also set the pool's `connectTimeout` so connections to an
   * unreachable server are given up. Defaults to 5 s.
   */
  timeout?: Duration;
}
