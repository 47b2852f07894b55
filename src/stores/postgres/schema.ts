import { ledgerMessages } from '../../ledger/defaults.ts';
import { InvalidOptionError } from '../../pipeline/errors.ts';
import { maxIdentifierBytes, postgresLockStoreDefaults } from './defaults.ts';
import type { PostgresTableOptions } from './options.ts';

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
  /** Unqualified: an index is created in its table's schema. */
  readonly queueIndex: string;
  /** The run ledger's functions: each operation is one call of one of them. */
  readonly claim: string;
  readonly renew: string;
  readonly finish: string;
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

/** Validates the table options and derives every table's and function's quoted name. */
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
    queueIndex: quoteIdentifier(`${table}_queue_idx`),
    claim: qualify(`${table}_claim`),
    renew: qualify(`${table}_renew`),
    finish: qualify(`${table}_finish`),
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

/**
 * Dollar-quotes a function body with a tag that does not occur in it (the body contains the
 * table names, which may contain anything but NUL), so nothing in a name can end the body early.
 */
function dollarQuote(body: string): string {
  let tag = '$resil$';
  for (let n = 1; `${body}${tag}`.indexOf(tag) !== body.length; n++) tag = `$resil_${n}$`;
  return `${tag}${body}${tag}`;
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

// The failure messages the ledger records for an occurrence it gives up, as MemoryLockStore's.
const abandonedMessage = literal(ledgerMessages.abandoned);
const cancelledMessage = literal(ledgerMessages.cancelled);

/** timestamptz to epoch ms (float8), rounded to the microsecond so whole milliseconds come back whole. */
export const toMs = (value: string) => `round((extract(epoch FROM ${value}) * 1000)::numeric, 3)::float8`;

/**
 * timestamptz to whole epoch ms (float8), truncated: for instants the store's clock made
 * (`started_at`, `ended_at`, `paused_at`), which PostgreSQL keeps to the microsecond, so that they
 * and the durations between them are whole milliseconds, as on every other store.
 */
export const toWholeMs = (value: string) => `floor(extract(epoch FROM ${value}) * 1000)::float8`;

// The functions of the run ledger. Each call is one statement in autocommit: it locks the key's
// lease row first (claims of one key, renewals and finishes serialize there), then reads the clock
// once with clock_timestamp(), so a call that waited for the lock judges expiry and deadlines at
// the instant it decides. They follow MemoryLockStore's decisions step by step.

/** Fails a running occurrence nobody may take over any more, as MemoryLockStore's #giveUp. */
function giveUp(t: PostgresTables, at: string, indent: string): string {
  return `UPDATE ${t.occurrences}
SET state = 'failure', ended_at = v_now, owner = NULL, expires_at = NULL, cancelled = false,
  reason = NULL, error = CASE WHEN cancelled THEN ${cancelledMessage} ELSE ${abandonedMessage} END
WHERE key = p_key AND job = p_job AND scheduled_at = ${at};`
    .split('\n')
    .map((line) => `${indent}${line}`)
    .join('\n');
}

/**
 * Drops the job's occurrences older than the retention (by scheduled_at; running ones stay), then
 * the oldest past the record limit, but none younger than p_keep_ms nor a running one, as
 * MemoryLockStore's #trim (needs v_now, p_retention_ms, p_record_limit and p_keep_ms). Durations
 * are capped at 1e14 ms (3 000 years) so that the cut-offs stay valid timestamps.
 */
function trim(t: PostgresTables, indent: string): string {
  return `DELETE FROM ${t.occurrences}
WHERE key = p_key AND job = p_job AND state <> 'running'
  AND scheduled_at < v_now - least(p_retention_ms, 1e14) * interval '1 millisecond';
DELETE FROM ${t.occurrences}
WHERE key = p_key AND job = p_job AND state <> 'running'
  AND scheduled_at < v_now - least(p_keep_ms, 1e14) * interval '1 millisecond'
  AND scheduled_at <= (
  SELECT scheduled_at FROM ${t.occurrences} WHERE key = p_key AND job = p_job
  ORDER BY scheduled_at DESC OFFSET p_record_limit LIMIT 1
);`
    .split('\n')
    .map((line) => `${indent}${line}`)
    .join('\n');
}

function claimFunction(t: PostgresTables): string {
  const body = `
DECLARE
  v_at timestamptz := to_timestamp(p_at_ms / 1000);
  v_per boolean := p_overlap = 'allow-all';
  v_ttl interval := p_ttl_ms * interval '1 millisecond';
  v_grace interval := p_deadline_ms * interval '1 millisecond';
  v_deadline timestamptz := v_at + v_grace;
  v_now timestamptz;
  v_lease ${t.leases}%ROWTYPE;
  v_live boolean;
  v_entry ${t.occurrences}%ROWTYPE;
  v_found boolean;
  v_running boolean;
  v_other ${t.occurrences}%ROWTYPE;
  v_head timestamptz;
  v_pick timestamptz;
  v_pick_takeover boolean := false;
  v_enqueue boolean := false;
  v_skip text;
  v_token bigint;
BEGIN
  -- The key's row, locked: a new key's first token is the clock in microseconds, as acquire's.
  LOOP
    INSERT INTO ${t.leases} (key, owner, token, expires_at)
    VALUES (p_key, NULL, floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint - 1, NULL)
    ON CONFLICT (key) DO NOTHING;
    SELECT * INTO v_lease FROM ${t.leases} WHERE key = p_key FOR UPDATE;
    EXIT WHEN FOUND;
  END LOOP;
  v_now := clock_timestamp();
  v_live := v_lease.owner IS NOT NULL AND v_lease.expires_at > v_now;
  SELECT * INTO v_entry FROM ${t.occurrences}
  WHERE key = p_key AND job = p_job AND scheduled_at = v_at;
  v_found := FOUND;
  v_running := v_found AND v_entry.state = 'running';

  <<decide>>
  BEGIN
    IF p_manual THEN
      IF NOT v_per AND v_live THEN
        status := 'skipped';
        skip_reason := 'overlap';
        RETURN;
      END IF;
      v_pick := v_at;
      EXIT decide;
    END IF;
    IF v_now < v_at THEN
      status := 'wait';
      retry_at := p_at_ms;
      running_elsewhere := false;
      RETURN;
    END IF;
    IF v_found AND v_entry.state IN ('success', 'failure', 'skipped') THEN
      status := 'skipped';
      skip_reason := 'already-done';
      RETURN;
    END IF;
    -- A paused job's running occurrence runs on; any other is skipped.
    IF NOT v_running AND EXISTS (SELECT 1 FROM ${t.pauses} WHERE key = p_key AND job = p_job) THEN
      v_skip := 'paused';
      EXIT decide;
    END IF;

    -- A running occurrence is judged by its own lease: still renewed, to be taken over, or given up.
    IF v_running AND v_entry.expires_at > v_now THEN
      status := 'wait';
      retry_at := ${toMs('v_entry.expires_at')};
      running_elsewhere := true;
      RETURN;
    END IF;
    IF v_running AND (v_entry.cancelled OR v_now > v_entry.expires_at + v_grace) THEN
${giveUp(t, 'v_at', '      ')}
      status := 'skipped';
      skip_reason := 'already-done';
      RETURN;
    END IF;

    -- Another occurrence (or a plain lock) holds the lease this one needs.
    IF NOT v_per AND v_live THEN
      -- Abandoned, but the key is taken: it waits for the key (a takeover still needs the lease).
      IF v_running THEN
        status := 'wait';
        retry_at := ${toMs('v_lease.expires_at')};
        running_elsewhere := true;
        RETURN;
      END IF;
      IF v_now > v_deadline THEN
        v_skip := 'missed';
      ELSE
        v_enqueue := NOT (v_found AND v_entry.state = 'queued');
      END IF;
      EXIT decide;
    END IF;

    IF NOT v_running AND v_now > v_deadline THEN
      v_skip := 'missed';
      EXIT decide;
    END IF;

    -- The lease is free: it goes to the oldest occurrence still allowed to start. The requested
    -- one (a takeover if it is running), the key's current one if its holder stopped renewing,
    -- within the takeover window (else it is failed), and the oldest queued one.
    v_pick := v_at;
    v_pick_takeover := v_running;
    IF NOT v_per THEN
      IF v_lease.current_job = p_job AND v_lease.current_at <> v_at THEN
        SELECT * INTO v_other FROM ${t.occurrences}
        WHERE key = p_key AND job = p_job AND scheduled_at = v_lease.current_at;
        IF FOUND AND v_other.state = 'running' THEN
          IF NOT v_other.cancelled AND v_now <= v_other.expires_at + v_grace THEN
            IF v_lease.current_at < v_pick THEN
              v_pick := v_lease.current_at;
              v_pick_takeover := true;
            END IF;
          ELSE
${giveUp(t, 'v_lease.current_at', '            ')}
          END IF;
        END IF;
      END IF;

      -- The oldest queued one within its deadline; the queued ones before it missed theirs.
      SELECT min(scheduled_at) INTO v_head FROM ${t.occurrences}
      WHERE key = p_key AND job = p_job AND deadline IS NOT NULL AND state = 'queued'
        AND v_now <= deadline;
      UPDATE ${t.occurrences}
      SET deadline = NULL,
        reason = CASE WHEN state = 'queued' THEN 'missed' ELSE reason END,
        ended_at = CASE WHEN state = 'queued' THEN v_now ELSE ended_at END,
        state = CASE WHEN state = 'queued' THEN 'skipped' ELSE state END
      WHERE key = p_key AND job = p_job AND deadline IS NOT NULL
        AND (v_head IS NULL OR scheduled_at < v_head);
      IF v_head < v_pick THEN
        v_pick := v_head;
        v_pick_takeover := false;
      END IF;
    END IF;
    -- Its own occurrence meets the one it was handed as it would meet any running occurrence.
    v_enqueue := v_pick <> v_at AND NOT v_found;
  END decide;

  IF v_pick IS NOT NULL THEN
    UPDATE ${t.leases}
    SET token = token + 1,
      owner = CASE WHEN v_per THEN owner ELSE p_owner END,
      expires_at = CASE WHEN v_per THEN expires_at ELSE v_now + v_ttl END,
      current_job = CASE WHEN v_per THEN current_job ELSE p_job END,
      current_at = CASE WHEN v_per THEN current_at ELSE v_pick END
    WHERE key = p_key
    RETURNING token INTO v_token;
    INSERT INTO ${t.occurrences} AS occurrence
      (key, job, scheduled_at, state, token, owner, instance, started_at, expires_at, takeovers)
    VALUES (p_key, p_job, v_pick, 'running', v_token, p_owner, p_instance, v_now, v_now + v_ttl,
      CASE WHEN v_pick_takeover THEN 1 ELSE 0 END)
    ON CONFLICT (key, job, scheduled_at) DO UPDATE
    SET state = 'running', reason = NULL, token = EXCLUDED.token, owner = EXCLUDED.owner,
      instance = EXCLUDED.instance, started_at = EXCLUDED.started_at, ended_at = NULL,
      expires_at = EXCLUDED.expires_at, cancelled = false, deadline = NULL,
      takeovers = occurrence.takeovers + EXCLUDED.takeovers, error = NULL;
  END IF;

  -- Queue the requested occurrence behind the running one, unless the policy says skip.
  IF v_enqueue THEN
    IF p_overlap = 'skip' OR (p_overlap = 'buffer-one' AND EXISTS (
      SELECT 1 FROM ${t.occurrences}
      WHERE key = p_key AND job = p_job AND deadline IS NOT NULL AND scheduled_at <> v_at
        AND v_now <= deadline AND state = 'queued'
    )) THEN
      v_skip := 'overlap';
    ELSE
      INSERT INTO ${t.occurrences} (key, job, scheduled_at, state, instance, deadline)
      VALUES (p_key, p_job, v_at, 'queued', p_instance, v_deadline)
      ON CONFLICT (key, job, scheduled_at) DO UPDATE
      SET state = 'queued', reason = NULL, token = NULL, owner = NULL, instance = EXCLUDED.instance,
        started_at = NULL, ended_at = NULL, expires_at = NULL, cancelled = false,
        deadline = EXCLUDED.deadline, takeovers = 0, error = NULL;
    END IF;
  END IF;

  -- A recorded skip trims the job's records, as a finish does.
  IF v_skip IS NOT NULL THEN
    INSERT INTO ${t.occurrences} (key, job, scheduled_at, state, reason, instance, ended_at)
    VALUES (p_key, p_job, v_at, 'skipped', v_skip, p_instance, v_now)
    ON CONFLICT (key, job, scheduled_at) DO UPDATE
    SET state = 'skipped', reason = EXCLUDED.reason, token = NULL, owner = NULL,
      instance = EXCLUDED.instance, started_at = NULL, ended_at = EXCLUDED.ended_at, expires_at = NULL,
      cancelled = false, deadline = NULL, takeovers = 0, error = NULL;
${trim(t, '    ')}
  END IF;

  IF v_pick IS NOT NULL THEN
    status := 'granted';
    lease_at := CASE WHEN v_pick = v_at THEN p_at_ms ELSE ${toMs('v_pick')} END;
    lease_token := v_token;
    takeover := v_pick_takeover;
  ELSIF v_skip IS NOT NULL THEN
    status := 'skipped';
    skip_reason := v_skip;
  ELSE
    -- Queued behind the key's holder; cancel-other marks the holder if it is a running occurrence
    -- of this job, refused at its next renewal.
    IF p_overlap = 'cancel-other' AND v_lease.current_job = p_job THEN
      UPDATE ${t.occurrences} SET cancelled = true
      WHERE key = p_key AND job = p_job AND scheduled_at = v_lease.current_at AND state = 'running';
    END IF;
    status := 'wait';
    retry_at := ${toMs('v_lease.expires_at')};
    running_elsewhere := false;
  END IF;
END
`;
  return `CREATE OR REPLACE FUNCTION ${t.claim}(
  p_key text, p_job text, p_at_ms float8, p_owner text, p_instance text, p_ttl_ms float8,
  p_overlap text, p_deadline_ms float8, p_manual boolean, p_retention_ms float8, p_record_limit integer,
  p_keep_ms float8,
  OUT status text, OUT retry_at float8, OUT running_elsewhere boolean, OUT skip_reason text,
  OUT lease_at float8, OUT lease_token bigint, OUT takeover boolean
) LANGUAGE plpgsql AS ${dollarQuote(body)}`;
}

/**
 * Frees the holder's lease, as MemoryLockStore's #releaseOccurrence (needs v_entry, v_now, v_at),
 * and wakes the key's waiters as a release does (NOTIFY when someone waits, see the store's release).
 */
function releaseOccurrence(t: PostgresTables, indent: string): string {
  return `UPDATE ${t.occurrences} SET expires_at = v_now
WHERE key = p_key AND job = p_job AND scheduled_at = v_at;
IF p_overlap <> 'allow-all' THEN
  UPDATE ${t.leases}
  SET owner = NULL, expires_at = NULL,
    current_job = CASE WHEN current_job = p_job AND current_at = v_at THEN NULL ELSE current_job END,
    current_at = CASE WHEN current_job = p_job AND current_at = v_at THEN NULL ELSE current_at END
  WHERE key = p_key AND owner = p_owner;
  IF FOUND AND ${someoneWaitsOn(t, 'p_key')} THEN
    PERFORM pg_notify(${literal(t.releaseChannel)}, p_key);
  END IF;
END IF;`
    .split('\n')
    .map((line) => `${indent}${line}`)
    .join('\n');
}

// A renewal of a lease on the key (not allow-all) also needs the key's live lease to be the
// holder's: when it is not, nothing is renewed.
function renewFunction(t: PostgresTables): string {
  const body = `
DECLARE
  v_at timestamptz := to_timestamp(p_at_ms / 1000);
  v_now timestamptz;
  v_entry ${t.occurrences}%ROWTYPE;
BEGIN
  PERFORM 1 FROM ${t.leases} WHERE key = p_key FOR UPDATE;
  v_now := clock_timestamp();
  SELECT * INTO v_entry FROM ${t.occurrences}
  WHERE key = p_key AND job = p_job AND scheduled_at = v_at;
  IF NOT FOUND OR v_entry.state <> 'running' OR v_entry.owner IS DISTINCT FROM p_owner
    OR NOT (v_entry.expires_at > v_now) THEN
    RETURN false;
  END IF;
  IF v_entry.cancelled THEN
${releaseOccurrence(t, '    ')}
    RETURN false;
  END IF;
  IF p_overlap <> 'allow-all' THEN
    UPDATE ${t.leases} SET expires_at = v_now + p_ttl_ms * interval '1 millisecond'
    WHERE key = p_key AND owner = p_owner AND expires_at > v_now;
    IF NOT FOUND THEN
      RETURN false;
    END IF;
  END IF;
  UPDATE ${t.occurrences} SET expires_at = v_now + p_ttl_ms * interval '1 millisecond'
  WHERE key = p_key AND job = p_job AND scheduled_at = v_at;
  RETURN true;
END
`;
  return `CREATE OR REPLACE FUNCTION ${t.renew}(
  p_key text, p_job text, p_at_ms float8, p_owner text, p_ttl_ms float8, p_overlap text
) RETURNS boolean LANGUAGE plpgsql AS ${dollarQuote(body)}`;
}

// Returns NULL when the end was recorded, else the occurrence's higher token (nothing was written
// but the release of the holder's lease). The new outcome replaces an earlier error and reason.
function finishFunction(t: PostgresTables): string {
  const body = `
DECLARE
  v_at timestamptz := to_timestamp(p_at_ms / 1000);
  v_now timestamptz;
  v_entry ${t.occurrences}%ROWTYPE;
  v_found boolean;
BEGIN
  PERFORM 1 FROM ${t.leases} WHERE key = p_key FOR UPDATE;
  v_now := clock_timestamp();
  SELECT * INTO v_entry FROM ${t.occurrences}
  WHERE key = p_key AND job = p_job AND scheduled_at = v_at;
  v_found := FOUND;
  IF v_found AND v_entry.owner = p_owner THEN
${releaseOccurrence(t, '    ')}
  END IF;
  IF v_found AND v_entry.token > p_token THEN
    RETURN v_entry.token;
  END IF;
  INSERT INTO ${t.occurrences} (key, job, scheduled_at, state, ended_at, error)
  VALUES (p_key, p_job, v_at, p_outcome, v_now,
    CASE WHEN v_found AND v_entry.cancelled AND p_outcome = 'failure'
      THEN ${cancelledMessage} ELSE p_error END)
  ON CONFLICT (key, job, scheduled_at) DO UPDATE
  SET state = EXCLUDED.state, ended_at = EXCLUDED.ended_at, error = EXCLUDED.error, reason = NULL,
    owner = NULL, expires_at = NULL, cancelled = false;
${trim(t, '  ')}
  RETURN NULL;
END
`;
  return `CREATE OR REPLACE FUNCTION ${t.finish}(
  p_key text, p_job text, p_at_ms float8, p_owner text, p_token bigint, p_overlap text,
  p_outcome text, p_error text, p_retention_ms float8, p_record_limit integer, p_keep_ms float8
) RETURNS bigint LANGUAGE plpgsql AS ${dollarQuote(body)}`;
}

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
    claimFunction(tables),
    renewFunction(tables),
    finishFunction(tables),
    `CREATE TABLE IF NOT EXISTS ${tables.fences} (
  resource text PRIMARY KEY,
  token bigint NOT NULL,
  fenced_at timestamptz NOT NULL DEFAULT now()
)`,
    `CREATE TABLE IF NOT EXISTS ${tables.instances} (
  instance text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  version text NOT NULL,
  started_at timestamptz NOT NULL,
  jobs integer NOT NULL,
  clock_offset_ms float8 NOT NULL,
  last_seen_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
)`,
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
