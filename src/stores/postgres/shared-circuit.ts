/**
 * Shared circuit breakers (`circuitBreaker.store`) in PostgreSQL: one row per breaker key in
 * `<table>_circuits`, created with the store's other tables. A sync and a probe claim are each one
 * statement (one round trip, atomic), judged by the database's clock, and do what `applyCircuitSync`
 * (src/ledger/shared-circuit.ts) does: counts and guarded transitions, no decision.
 */
import type {
  CircuitProbeClaim,
  CircuitSync,
  CircuitSyncReply,
  SharedCircuitState,
} from '../../strategies/circuit-breaker/shared.ts';

/**
 * The counts live in the row as three arrays of the same length, one element per bucket of a
 * tenth of the sampling duration: its number (epoch ms / width), its successes, its failures.
 */
export function circuitTableSql(circuits: string): string {
  return `CREATE TABLE IF NOT EXISTS ${circuits} (
  key text PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('closed', 'open', 'isolated')),
  open_until timestamptz,
  generation bigint NOT NULL,
  probe_owner text,
  probe_until timestamptz,
  bucket_ids bigint[] NOT NULL,
  successes bigint[] NOT NULL,
  failures bigint[] NOT NULL
)`;
}

const ms = (parameter: string) => `${parameter}::float8 * interval '1 millisecond'`;
const msUntil = (instant: string) => `coalesce(extract(epoch FROM ${instant} - now()) * 1000, 0)`;

/**
 * $1 key, $2 owner, $3 successes, $4 failures, $5 samplingDuration ms, $6 transition ('' for none),
 * $7 breakDuration ms, $8 generation seen (for `open`).
 *
 * The row is read FOR UPDATE, so concurrent syncs of one key apply one after the other, each to
 * the row as the one before it left it. It is written only when something changed (counts, a
 * transition); a sync without counts only reads. A row another instance inserted since this
 * statement's snapshot is not overwritten (the ON CONFLICT update requires that the row was seen):
 * the statement then returns no row and is sent again.
 */
export function circuitStatements(circuits: string) {
  const sync = `WITH old AS (
  SELECT * FROM ${circuits} WHERE key = $1::text FOR UPDATE
),
base AS (
  SELECT old.key IS NOT NULL AS existed,
    floor(extract(epoch FROM now()) * 1000 / ($5::float8 / 10))::bigint AS bucket,
    coalesce(old.state, 'closed') AS state, old.open_until, coalesce(old.generation, 0) AS generation,
    old.probe_owner, old.probe_until,
    coalesce(old.bucket_ids, '{}') AS ids, coalesce(old.successes, '{}') AS s, coalesce(old.failures, '{}') AS f,
    CASE
      WHEN $6::text = 'open' AND coalesce(old.state, 'closed') = 'closed'
        AND coalesce(old.generation, 0) = $8::bigint THEN 'open'
      WHEN $6::text IN ('close', 'reopen') AND old.state = 'open' AND old.probe_owner = $2::text
        AND old.probe_until > now() THEN $6::text
      WHEN $6::text IN ('isolate', 'reset') THEN $6::text
      ELSE ''
    END AS applied
  FROM (SELECT 1) AS one LEFT JOIN old ON true
),
moved AS (
  SELECT existed, bucket, applied,
    CASE applied
      WHEN 'open' THEN 'open' WHEN 'close' THEN 'closed' WHEN 'reset' THEN 'closed' WHEN 'isolate' THEN 'isolated'
      ELSE state
    END AS state,
    CASE WHEN applied IN ('open', 'reopen') THEN now() + ${ms('$7')} ELSE open_until END AS open_until,
    generation + CASE
      WHEN applied IN ('open', 'close', 'reopen') THEN 1
      WHEN applied = 'isolate' AND state <> 'isolated' THEN 1
      WHEN applied = 'reset' AND state <> 'closed' THEN 1
      ELSE 0
    END AS generation,
    CASE WHEN applied = '' THEN probe_owner END AS probe_owner,
    CASE WHEN applied = '' THEN probe_until END AS probe_until,
    CASE WHEN applied IN ('close', 'reset') THEN '{}' ELSE ids END AS ids,
    CASE WHEN applied IN ('close', 'reset') THEN '{}' ELSE s END AS s,
    CASE WHEN applied IN ('close', 'reset') THEN '{}' ELSE f END AS f
  FROM base
),
buckets AS (
  SELECT x.id, sum(x.s)::bigint AS s, sum(x.f)::bigint AS f
  FROM moved m, LATERAL (
    SELECT u.id, u.s, u.f FROM unnest(m.ids, m.s, m.f) AS u(id, s, f)
    UNION ALL SELECT m.bucket, $3::bigint, $4::bigint WHERE $3::bigint + $4::bigint > 0
  ) AS x
  WHERE x.id > m.bucket - 10
  GROUP BY x.id
),
final AS (
  SELECT m.*, m.applied <> '' OR $3::bigint + $4::bigint > 0 AS writes,
    coalesce((SELECT array_agg(id ORDER BY id) FROM buckets), '{}') AS new_ids,
    coalesce((SELECT array_agg(s ORDER BY id) FROM buckets), '{}') AS new_s,
    coalesce((SELECT array_agg(f ORDER BY id) FROM buckets), '{}') AS new_f,
    coalesce((SELECT sum(s) FROM buckets), 0)::float8 AS total_s,
    coalesce((SELECT sum(f) FROM buckets), 0)::float8 AS total_f
  FROM moved m
),
written AS (
  INSERT INTO ${circuits} AS circuit
    (key, state, open_until, generation, probe_owner, probe_until, bucket_ids, successes, failures)
  SELECT $1::text, state, open_until, generation, probe_owner, probe_until, new_ids, new_s, new_f
  FROM final WHERE writes
  ON CONFLICT (key) DO UPDATE
    SET state = EXCLUDED.state, open_until = EXCLUDED.open_until, generation = EXCLUDED.generation,
      probe_owner = EXCLUDED.probe_owner, probe_until = EXCLUDED.probe_until, bucket_ids = EXCLUDED.bucket_ids,
      successes = EXCLUDED.successes, failures = EXCLUDED.failures
    WHERE (SELECT existed FROM final)
  RETURNING 1
)
SELECT state, generation, total_s AS successes, total_f AS failures,
  CASE WHEN state = 'open' THEN greatest(0, ${msUntil('open_until')},
    CASE WHEN probe_owner IS NOT NULL THEN ${msUntil('probe_until')} ELSE 0 END) ELSE 0 END AS retry_after
FROM final WHERE existed OR NOT writes OR EXISTS (SELECT 1 FROM written)`;

  // Of concurrent claims, the first takes the row lock and the lease; the others wait for it, find
  // the lease live when they re-check the row, and update nothing.
  const claim = `WITH claimed AS (
  UPDATE ${circuits} SET probe_owner = $2::text, probe_until = now() + ${ms('$3')}
  WHERE key = $1::text AND state = 'open' AND open_until <= now() AND (probe_owner IS NULL OR probe_until <= now())
  RETURNING state, generation
)
SELECT true AS claimed, state, generation, 0::float8 AS retry_after FROM claimed
UNION ALL
SELECT false, state, generation,
  CASE WHEN state = 'open' THEN greatest(0, ${msUntil('open_until')},
    CASE WHEN probe_owner IS NOT NULL THEN ${msUntil('probe_until')} ELSE 0 END) ELSE 0 END
FROM ${circuits} WHERE key = $1::text AND NOT EXISTS (SELECT 1 FROM claimed)`;

  return { sync, claim };
}

export type CircuitStatements = ReturnType<typeof circuitStatements>;

/** Sends a statement of {@link circuitStatements}, bounded like the store's other statements. */
export type QueryCircuit = (
  operation: string,
  text: string,
  values: unknown[],
) => Promise<{ rows: Array<Record<string, unknown>> }>;

function stateOf(row: Record<string, unknown> | undefined): SharedCircuitState {
  const state = row?.state;
  return {
    state: state === 'open' || state === 'isolated' ? state : 'closed',
    retryAfter: Math.ceil(Number(row?.retry_after ?? 0)),
    generation: Number(row?.generation ?? 0),
  };
}

export async function syncPostgresCircuit(
  query: QueryCircuit,
  sql: CircuitStatements,
  key: string,
  sync: CircuitSync,
): Promise<CircuitSyncReply> {
  const values = [
    key,
    sync.owner,
    sync.successes,
    sync.failures,
    sync.samplingDuration,
    sync.transition ?? '',
    sync.breakDuration,
    sync.generation,
  ];
  let { rows } = await query('syncCircuit', sql.sync, values);
  // The key's row was inserted by another instance since this statement's snapshot: once more.
  if (rows.length === 0) ({ rows } = await query('syncCircuit', sql.sync, values));
  const row = rows[0];
  return { ...stateOf(row), successes: Number(row?.successes ?? 0), failures: Number(row?.failures ?? 0) };
}

export async function claimPostgresProbe(
  query: QueryCircuit,
  sql: CircuitStatements,
  key: string,
  claim: { readonly owner: string; readonly leaseMs: number },
): Promise<CircuitProbeClaim> {
  const { rows } = await query('claimProbe', sql.claim, [key, claim.owner, claim.leaseMs]);
  return { ...stateOf(rows[0]), claimed: rows[0]?.claimed === true };
}
