import { InvalidOptionError } from '../../pipeline/errors.ts';
import { maxIdentifierBytes, postgresLockStoreDefaults } from './defaults.ts';
import type { PostgresTableOptions } from './options.ts';
import { circuitTableSql } from './shared-circuit.ts';
import { rateLimitTableSql } from './shared-rate-limit.ts';

/** The quoted, schema-qualified names of the store's tables and functions, ready to put into SQL. */
export interface PostgresTables {
  readonly leases: string;
  /** The run ledger: one row per occurrence `(key, job, scheduled_at)`. */
  readonly occurrences: string;
  readonly fences: string;
  /** Paused jobs: one row per `(key, job)` while it is paused. */
  readonly pauses: string;
  /** The fleet's instances (`registerInstance`): one row per instance, live until its `expires_at`. */
  readonly instances: string;
  /** Shared circuit breakers (`circuitBreaker.store`): one row per breaker key, see shared-circuit.ts. */
  readonly circuits: string;
  /** The rate limiter's shared budgets (shared-rate-limit.ts): one row per limit key. */
  readonly rateLimits: string;
  /** Unqualified: an index is created in its table's schema. */
  readonly queueIndex: string;
  /** Serializes concurrent set-ups of these tables (`pg_advisory_xact_lock` key). */
  readonly setupLockKey: string;
  /**
   * The NOTIFY channel a release announces its key on (`onRelease`), unquoted: `resil_released_`
   * and a hash of the schema and table, so stores on other tables are not woken.
   */
  readonly releaseChannel: string;
  /**
   * The first key of the two-key advisory locks that mark a key as waited on: the store's
   * listening client holds `(waiterLockClass, hashtext(key))` shared while it waits on `key`, and
   * a release notifies only when it cannot take that lock itself, so releases nobody waits for pay
   * for no NOTIFY (which serializes the commits of every notifying transaction).
   */
  readonly waiterLockClass: number;
}

// Every name derived from `table` adds at most 13 bytes (`_occurrences` is the longest), so a
// table of up to 50 bytes keeps every name within PostgreSQL's limit, and distinct.
const maxSuffixBytes = 13;
const maxTableBytes = maxIdentifierBytes - maxSuffixBytes;
const utf8 = new TextEncoder();

function checkIdentifier(option: string, value: unknown, maxBytes: number): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.includes('\0') ||
    utf8.encode(value).length > maxBytes
  ) {
    throw new InvalidOptionError(option, value, `a PostgreSQL identifier of 1 to ${maxBytes} bytes`);
  }
  return value;
}

/** Quotes an identifier for SQL: the name is taken literally, case and all. */
function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Validates the table options and derives every table's quoted name. */
export function resolveTables(options: PostgresTableOptions = {}): PostgresTables {
  const table = checkIdentifier('table', options.table ?? postgresLockStoreDefaults.table, maxTableBytes);
  const schema =
    options.schema === undefined ? undefined : checkIdentifier('schema', options.schema, maxIdentifierBytes);
  const qualify = (name: string) =>
    schema === undefined ? quoteIdentifier(name) : `${quoteIdentifier(schema)}.${quoteIdentifier(name)}`;
  return {
    leases: qualify(table),
    occurrences: qualify(`${table}_occurrences`),
    fences: qualify(`${table}_fences`),
    pauses: qualify(`${table}_pauses`),
    instances: qualify(`${table}_instances`),
    circuits: qualify(`${table}_circuits`),
    rateLimits: qualify(`${table}_rate_limits`),
    queueIndex: quoteIdentifier(`${table}_queue_idx`),
    setupLockKey: String(stableHash(`${schema ?? ''}.${table}`)),
    releaseChannel: `resil_released_${BigInt.asUintN(63, stableHash(`released:${schema ?? ''}.${table}`)).toString(16)}`,
    waiterLockClass: Number(BigInt.asIntN(32, stableHash(`waiting:${schema ?? ''}.${table}`))),
  };
}

/** Quotes an identifier for SQL (a channel for LISTEN): the name is taken literally. */
export { quoteIdentifier };

// A stable 63-bit number per name (FNV-1a): per (schema, table), the set-up lock key, so unrelated
// stores do not wait for each other, and the release channel, so they do not wake each other.
function stableHash(name: string): bigint {
  let hash = 0xcbf29ce484222325n;
  for (const byte of utf8.encode(`resil:${name}`)) {
    hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
  }
  return BigInt.asIntN(63, hash);
}

/** A SQL string literal (standard_conforming_strings, the default since PostgreSQL 9.1). */
export const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * SQL that is true when a release of `key` (an SQL expression) should be announced: someone waits
 * on it (a listening client holds the key's waiter lock shared, so the release cannot take it), and
 * the key fits a NOTIFY payload (8000 bytes; a longer key is not announced, its waiters poll).
 */
export const someoneWaitsOn = (t: PostgresTables, key: string) =>
  `octet_length(${key}) < 8000 AND NOT pg_try_advisory_xact_lock(${t.waiterLockClass}, hashtext(${key}))`;

/** timestamptz to epoch ms (float8), rounded to the microsecond so whole milliseconds come back whole. */
export const toMs = (value: string) => `round((extract(epoch FROM ${value}) * 1000)::numeric, 3)::float8`;

/**
 * timestamptz to whole epoch ms (float8), truncated: for instants the store's clock made
 * (`started_at`, `ended_at`, `paused_at`), which PostgreSQL keeps to the microsecond, so that they
 * and the durations between them are whole milliseconds, as on every other store.
 */
export const toWholeMs = (value: string) => `floor(extract(epoch FROM ${value}) * 1000)::float8`;

function createStatements(tables: PostgresTables): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${tables.leases} (
  key text PRIMARY KEY,
  owner text,
  token bigint NOT NULL,
  expires_at timestamptz,
  current_job text,
  current_at timestamptz
)`,
    `CREATE TABLE IF NOT EXISTS ${tables.occurrences} (
  key text NOT NULL,
  job text NOT NULL,
  scheduled_at timestamptz NOT NULL,
  state text NOT NULL CHECK (state IN ('queued', 'running', 'success', 'failure', 'skipped')),
  reason text CHECK (reason IN ('overlap', 'missed', 'paused')),
  token bigint,
  owner text,
  instance text,
  started_at timestamptz,
  ended_at timestamptz,
  expires_at timestamptz,
  cancelled boolean NOT NULL DEFAULT false,
  deadline timestamptz,
  takeovers integer NOT NULL DEFAULT 0,
  error text,
  run_trigger text,
  actor text,
  trigger_reason text,
  PRIMARY KEY (key, job, scheduled_at)
)`,
    `CREATE INDEX IF NOT EXISTS ${tables.queueIndex} ON ${tables.occurrences} (key, job, scheduled_at)
  WHERE deadline IS NOT NULL`,
    `CREATE TABLE IF NOT EXISTS ${tables.pauses} (
  key text NOT NULL,
  job text NOT NULL,
  paused_at timestamptz NOT NULL,
  paused_by text NOT NULL,
  reason text,
  PRIMARY KEY (key, job)
)`,
    `CREATE TABLE IF NOT EXISTS ${tables.fences} (
  resource text PRIMARY KEY,
  token bigint NOT NULL,
  fenced_at timestamptz NOT NULL DEFAULT now()
)`,
    rateLimitTableSql(tables.rateLimits),
    `CREATE TABLE IF NOT EXISTS ${tables.instances} (
  instance text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  version text NOT NULL,
  started_at timestamptz NOT NULL,
  jobs integer NOT NULL,
  clock_offset_ms float8 NOT NULL,
  last_seen_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  definitions text
)`,
    // Tables made before instances published their jobs' definitions (config drift) lack the column.
    // Looked up first: ALTER TABLE, even a no-op one, needs the table's owner, which a store that
    // may create tables (CREATE on the schema) need not be.
    `DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_attribute
    WHERE attrelid = to_regclass('${tables.instances.replaceAll("'", "''")}') AND attname = 'definitions' AND NOT attisdropped)
  THEN ALTER TABLE ${tables.instances} ADD COLUMN definitions text;
  END IF;
END $$`,
    // Tables made before runs recorded how they started lack these columns (looked up first, as above).
    `DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_attribute
    WHERE attrelid = to_regclass('${tables.occurrences.replaceAll("'", "''")}') AND attname = 'run_trigger' AND NOT attisdropped)
  THEN ALTER TABLE ${tables.occurrences} ADD COLUMN run_trigger text, ADD COLUMN actor text, ADD COLUMN trigger_reason text;
  END IF;
END $$`,
    circuitTableSql(tables.circuits),
  ];
}

/**
 * The SQL that creates the store's tables and functions (and the fence table of the fencing
 * helpers), for running by hand or in a migration when `createTable: false`. Idempotent.
 *
 * @example
 * // in a migration
 * await client.query(postgresLockStoreSql({ schema: 'ops' }));
 */
export function postgresLockStoreSql(options: PostgresTableOptions = {}): string {
  return `${createStatements(resolveTables(options)).join(';\n\n')};\n`;
}

/**
 * What the store runs on first use. One simple-protocol query, so PostgreSQL runs it as one
 * transaction, and the advisory lock taken first holds until that transaction ends: two processes
 * starting at once create the tables one after the other instead of racing on the catalog
 * (a bare `CREATE TABLE IF NOT EXISTS` can fail with unique_violation on `pg_type`, and two
 * concurrent `CREATE OR REPLACE FUNCTION` with "tuple concurrently updated").
 */
export function setupSql(tables: PostgresTables): string {
  return [`SELECT pg_advisory_xact_lock(${tables.setupLockKey})`, ...createStatements(tables)].join(';\n');
}
