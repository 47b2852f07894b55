import { InvalidOptionError } from '../../pipeline/errors.ts';
import { maxIdentifierBytes, postgresLockStoreDefaults } from './defaults.ts';
import type { PostgresTableOptions } from './options.ts';

/** The quoted, schema-qualified names of the store's tables, ready to put into SQL. */
export interface PostgresTables {
  readonly leases: string;
  readonly ledger: string;
  readonly runs: string;
  readonly completed: string;
  readonly fences: string;
  /** Unqualified: an index is created in its table's schema. */
  readonly runsIndex: string;
  /** Serializes concurrent set-ups of these tables (`pg_advisory_xact_lock` key). */
  readonly setupLockKey: string;
}

// The longest name derived from `table`; keeping it within the limit keeps every name distinct.
const longestSuffix = '_runs_job_idx';
const maxTableBytes = maxIdentifierBytes - longestSuffix.length;
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
    ledger: qualify(`${table}_ledger`),
    runs: qualify(`${table}_runs`),
    completed: qualify(`${table}_completed`),
    fences: qualify(`${table}_fences`),
    runsIndex: quoteIdentifier(`${table}${longestSuffix}`),
    setupLockKey: String(setupLockKey(`${schema ?? ''}.${table}`)),
  };
}

// A stable 63-bit key per (schema, table) (FNV-1a), so unrelated stores do not wait for each other.
function setupLockKey(name: string): bigint {
  let hash = 0xcbf29ce484222325n;
  for (const byte of utf8.encode(`resil:${name}`)) {
    hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
  }
  return BigInt.asIntN(63, hash);
}

function createStatements(tables: PostgresTables): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${tables.leases} (
  key text PRIMARY KEY,
  owner text,
  token bigint NOT NULL,
  expires_at timestamptz
)`,
    `CREATE TABLE IF NOT EXISTS ${tables.ledger} (
  job text PRIMARY KEY,
  highest_token bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`,
    `CREATE TABLE IF NOT EXISTS ${tables.runs} (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job text NOT NULL,
  scheduled_at timestamptz NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('success', 'failure')),
  token bigint NOT NULL,
  instance text NOT NULL,
  started_at timestamptz NOT NULL,
  ended_at timestamptz NOT NULL,
  error text,
  recorded_at timestamptz NOT NULL DEFAULT now()
)`,
    `CREATE INDEX IF NOT EXISTS ${tables.runsIndex} ON ${tables.runs} (job, id DESC)`,
    `CREATE TABLE IF NOT EXISTS ${tables.completed} (
  job text NOT NULL,
  scheduled_at timestamptz NOT NULL,
  token bigint NOT NULL,
  completed_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (job, scheduled_at)
)`,
    `CREATE TABLE IF NOT EXISTS ${tables.fences} (
  resource text PRIMARY KEY,
  token bigint NOT NULL,
  fenced_at timestamptz NOT NULL DEFAULT now()
)`,
  ];
}

/**
 * The SQL that creates the store's tables (and the fence table of the fencing helpers), for
 * running by hand or in a migration when `createTable: false`. Idempotent.
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
 * (a bare `CREATE TABLE IF NOT EXISTS` can fail with unique_violation on `pg_type`).
 */
export function setupSql(tables: PostgresTables): string {
  return [`SELECT pg_advisory_xact_lock(${tables.setupLockKey})`, ...createStatements(tables)].join(';\n');
}
