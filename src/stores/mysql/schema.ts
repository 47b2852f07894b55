import { InvalidOptionError } from '../../pipeline/errors.ts';
import { maxIdentifierLength, maxPrefixBytes, mysqlLockStoreDefaults } from './defaults.ts';
import type { MysqlTableOptions } from './options.ts';
import { circuitTableSql } from './shared-circuit.ts';
import { rateLimitTableSql } from './shared-rate-limit.ts';

/** The quoted names of the store's tables, ready to put into SQL, and its key prefix. */
export interface MysqlTables {
  readonly leases: string;
  /** The run ledger: one row per occurrence `(lock_key, job, scheduled_at_ms)`. */
  readonly occurrences: string;
  /** Paused jobs: one row per `(lock_key, job)` while it is paused. */
  readonly pauses: string;
  /** The fleet's instances (`registerInstance`): one row per instance, live until its `expires_at_ms`. */
  readonly instances: string;
  /** The instances table's name, unquoted (to look its columns up). */
  readonly instancesName: string;
  /** The occurrences table's name, unquoted (to look its columns up). */
  readonly occurrencesName: string;
  readonly fences: string;
  /** Shared circuit breakers (`circuitBreaker.store`): one row per breaker key, see shared-circuit.ts. */
  readonly circuits: string;
  /** The rate limiter's shared budgets (shared-rate-limit.ts): one row per limit key. */
  readonly rateLimits: string;
  /** Put before every key, job's key, resource and instance name the tables keep. */
  readonly prefix: string;
}

// Every name derived from `table` adds at most 12 characters (`_occurrences`).
const maxTableLength = maxIdentifierLength - 12;

/**
 * MySQL and MariaDB take any character of the Basic Multilingual Plane but NUL in a quoted
 * identifier, and no name may end with a space.
 */
function checkTable(value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > maxTableLength ||
    value.includes('\0') ||
    /[\uD800-\uDFFF]|\s$/.test(value)
  ) {
    throw new InvalidOptionError(
      'table',
      value,
      `a MySQL table name of 1 to ${maxTableLength} characters (no NUL, no character outside the Basic Multilingual Plane, not ending in a space)`,
    );
  }
  return value;
}

function checkPrefix(value: unknown): string {
  if (typeof value !== 'string' || /\p{Cs}/u.test(value) || Buffer.byteLength(value) > maxPrefixBytes) {
    throw new InvalidOptionError('prefix', value, `a string of at most ${maxPrefixBytes} bytes of UTF-8`);
  }
  return value;
}

/** Quotes an identifier for SQL: the name is taken literally. */
const quoteIdentifier = (name: string) => `\`${name.replaceAll('`', '``')}\``;

/** Validates the table options and derives every table's quoted name. */
export function resolveTables(options: MysqlTableOptions = {}): MysqlTables {
  const table = checkTable(options.table ?? mysqlLockStoreDefaults.table);
  return {
    leases: quoteIdentifier(table),
    occurrences: quoteIdentifier(`${table}_occurrences`),
    pauses: quoteIdentifier(`${table}_pauses`),
    instances: quoteIdentifier(`${table}_instances`),
    instancesName: `${table}_instances`,
    occurrencesName: `${table}_occurrences`,
    fences: quoteIdentifier(`${table}_fences`),
    circuits: quoteIdentifier(`${table}_circuits`),
    rateLimits: quoteIdentifier(`${table}_rate_limits`),
    prefix: checkPrefix(options.prefix ?? mysqlLockStoreDefaults.prefix),
  };
}

/**
 * The statement's instant on the database's clock, in epoch microseconds: UTC_TIMESTAMP is the
 * instant the statement started (one value everywhere in it, as NOW()), and in UTC whatever the
 * session's time zone, so no time zone setting of the server or the session moves it.
 */
export const nowUs = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";
/** {@link nowUs} in whole epoch milliseconds. */
export const nowMs = `(${nowUs} DIV 1000)`;

/**
 * A JSON array parameter as rows (`JSON_TABLE`, MySQL 8.0.4+ and MariaDB 10.6+): how one statement
 * takes a whole batch. `columns` are `name type` pairs, read in order from each element (an
 * array); `n` numbers the rows from 1.
 */
export function jsonRows(alias: string, columns: ReadonlyArray<readonly [string, string]>): string {
  const paths = columns.map(([name, type], index) => `${name} ${type} PATH '$[${index}]'`);
  return `JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, ${paths.join(', ')})) AS ${alias}`;
}

// Instants are epoch milliseconds (BIGINT), as Quartz's JDBC store keeps them: no time zone
// setting can change them, and they are what the decisions read and write. Keys and names are
// VARBINARY: compared byte for byte (a collation would fold case, and a PAD SPACE one would
// take `a` and `a ` for one key).
export function createStatements(tables: MysqlTables): string[] {
  const options = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4';
  return [
    `CREATE TABLE IF NOT EXISTS ${tables.leases} (
  lock_key VARBINARY(1255) NOT NULL,
  owner BLOB,
  token BIGINT NOT NULL,
  expires_at_ms BIGINT,
  current_job VARBINARY(1000),
  current_at_ms BIGINT,
  PRIMARY KEY (lock_key)
) ${options}`,
    `CREATE TABLE IF NOT EXISTS ${tables.occurrences} (
  lock_key VARBINARY(1255) NOT NULL,
  job VARBINARY(1000) NOT NULL,
  scheduled_at_ms BIGINT NOT NULL,
  state ENUM('queued', 'running', 'success', 'failure', 'skipped') NOT NULL,
  reason ENUM('overlap', 'missed', 'paused'),
  token BIGINT,
  owner BLOB,
  instance BLOB,
  started_at_ms BIGINT,
  ended_at_ms BIGINT,
  expires_at_ms BIGINT,
  cancelled BOOLEAN NOT NULL DEFAULT FALSE,
  deadline_ms BIGINT,
  takeovers INT NOT NULL DEFAULT 0,
  error MEDIUMTEXT,
  run_trigger VARCHAR(8),
  actor MEDIUMTEXT,
  trigger_reason MEDIUMTEXT,
  PRIMARY KEY (lock_key, job, scheduled_at_ms)
) ${options}`,
    `CREATE TABLE IF NOT EXISTS ${tables.pauses} (
  lock_key VARBINARY(1255) NOT NULL,
  job VARBINARY(1000) NOT NULL,
  paused_at_ms BIGINT NOT NULL,
  paused_by MEDIUMTEXT NOT NULL,
  reason MEDIUMTEXT,
  PRIMARY KEY (lock_key, job)
) ${options}`,
    `CREATE TABLE IF NOT EXISTS ${tables.fences} (
  resource VARBINARY(1255) NOT NULL,
  token BIGINT NOT NULL,
  fenced_at_ms BIGINT NOT NULL,
  PRIMARY KEY (resource)
) ${options}`,
    rateLimitTableSql(tables.rateLimits),
    `CREATE TABLE IF NOT EXISTS ${tables.instances} (
  instance VARBINARY(1255) NOT NULL,
  host MEDIUMTEXT NOT NULL,
  pid INT NOT NULL,
  version MEDIUMTEXT NOT NULL,
  started_at_ms BIGINT NOT NULL,
  jobs INT NOT NULL,
  clock_offset_ms DOUBLE NOT NULL,
  last_seen_at_ms BIGINT NOT NULL,
  expires_at_ms BIGINT NOT NULL,
  definitions LONGTEXT,
  PRIMARY KEY (instance)
) ${options}`,
    circuitTableSql(tables.circuits),
  ];
}

/**
 * Brings tables made by an earlier release up to what {@link createStatements} makes: the
 * instances' `definitions` column (config drift), the occurrences' `run_trigger`, `actor` and
 * `trigger_reason` (how a run started). For each, `missing` counts the column (0: run `add`);
 * looked up first, so that a store without `ALTER` on up-to-date tables sets up as before. Two
 * stores adding one at once: the later one's duplicate-column error (1060) means it is there.
 */
export function upgradeStatements(
  tables: MysqlTables,
): Array<{ missing: string; params: string[]; add: string }> {
  const missing = `SELECT COUNT(*) AS n FROM information_schema.columns
WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?`;
  return [
    {
      missing,
      params: [tables.instancesName, 'definitions'],
      add: `ALTER TABLE ${tables.instances} ADD COLUMN definitions LONGTEXT`,
    },
    {
      missing,
      params: [tables.occurrencesName, 'run_trigger'],
      add: `ALTER TABLE ${tables.occurrences} ADD COLUMN run_trigger VARCHAR(8), ADD COLUMN actor MEDIUMTEXT,
  ADD COLUMN trigger_reason MEDIUMTEXT`,
    },
  ];
}

/** MySQL's and MariaDB's `ER_DUP_FIELDNAME`: the column is there already. */
export function isDuplicateColumnError(error: unknown): boolean {
  return (error as { errno?: unknown } | null)?.errno === 1060;
}

/**
 * The SQL that creates the store's tables (and the fence table of the fencing helper), for
 * running by hand or in a migration when `createTable: false`. Idempotent.
 *
 * @example
 * // in a migration, with a connection made with multipleStatements: true (or run each statement)
 * await connection.query(mysqlLockStoreSql({ table: 'ops_locks' }));
 */
export function mysqlLockStoreSql(options: MysqlTableOptions = {}): string {
  return `${createStatements(resolveTables(options)).join(';\n\n')};\n`;
}
