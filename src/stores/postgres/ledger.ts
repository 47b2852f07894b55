import type { PoolClient } from 'pg';
import type { LedgerEntry, LedgerView } from '../../ledger/decide.ts';
import type { Applied, ReadTarget, StoredView, WriteChanges } from '../../ledger/engine.ts';
import { ledgerEntryOf } from '../../ledger/stored-entry.ts';
import { literal, type PostgresTables, someoneWaitsOn, toMs, toWholeMs } from './schema.ts';

/**
 * The run ledger's primitive on PostgreSQL: one transaction per batch of decisions (at most one per
 * key: the engine makes one decision at a time per key). It locks the keys' lease rows (creating
 * those missing) in key order, reads the views, lets each decision decide, writes what they
 * decided, and commits. Lease statements and other batches wait for those row locks, so the
 * decisions need no version. No statement here decides anything: they read and write rows.
 */

/** One decision waiting for its batch. */
export interface LedgerCall {
  readonly target: ReadTarget;
  readonly decide: (stored: StoredView) => WriteChanges | undefined;
}

/** Whole epoch ms of a timestamptz: every instant the decisions write is one. */
const ms = (column: string) => `floor(extract(epoch FROM ${column}) * 1000)::float8`;
const at = (parameter: string) => `to_timestamp(${parameter} / 1000)`;

export function ledgerStatements(t: PostgresTables) {
  const columns = `o.job, ${toMs('o.scheduled_at')} AS scheduled_at, o.state, o.reason, o.token, o.owner,
  o.instance, ${toWholeMs('o.started_at')} AS started_at, ${toWholeMs('o.ended_at')} AS ended_at,
  ${ms('o.expires_at')} AS expires_at, o.cancelled, ${ms('o.deadline')} AS deadline, o.takeovers, o.error,
  o.run_trigger, o.actor, o.trigger_reason`;
  return {
    // A new key's first token is the clock in microseconds, as an acquire's: the first grant
    // takes the counter + 1.
    create: `INSERT INTO ${t.leases} (key, owner, token, expires_at)
SELECT k, NULL, floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint - 1, NULL
FROM unnest($1::text[]) AS k
ON CONFLICT (key) DO NOTHING`,
    // The rows locked in key order.
    lock: `SELECT key, owner, ${ms('expires_at')} AS expires_at, current_job, ${toMs('current_at')} AS current_at
FROM ${t.leases} WHERE key = ANY($1::text[]) ORDER BY key FOR UPDATE`,
    // The clock, read once the rows are locked; then per target: the asked occurrence, the current
    // one, the queue (a claim's), the pause (a claim's), the running ones (a claim's with a
    // concurrency above 1), and with a trim the record count and the
    // oldest records: one more than the record limit's excess, and every one past the retention.
    read: `WITH t AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::float8[], $4::float8[], $5::boolean[], $6::float8[], $7::int[],
    $8::boolean[]) WITH ORDINALITY AS t(key, job, at_ms, current_ms, claim, retention_ms, record_limit, running, n)
)
SELECT t.n, 'entry' AS kind, NULL::bigint AS total, ${columns}
FROM t JOIN ${t.occurrences} o ON o.key = t.key AND o.job = t.job
  AND (o.scheduled_at = ${at('t.at_ms')} OR o.scheduled_at = ${at('t.current_ms')}
    OR (t.claim AND o.deadline IS NOT NULL AND o.state = 'queued') OR (t.running AND o.state = 'running'))
UNION ALL
SELECT t.n, 'oldest', x.total, ${columns.replaceAll('o.', 'x.')}
FROM t CROSS JOIN LATERAL (
  SELECT o.*, count(*) OVER () AS total, row_number() OVER (ORDER BY o.scheduled_at) AS rank
  FROM ${t.occurrences} o WHERE o.key = t.key AND o.job = t.job
) x
WHERE t.record_limit IS NOT NULL AND (x.rank <= x.total + 1 - t.record_limit
  OR x.scheduled_at < clock_timestamp() - least(t.retention_ms, 1e14) * interval '1 millisecond')
UNION ALL
SELECT t.n, 'paused', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL
FROM t JOIN ${t.pauses} p ON p.key = t.key AND p.job = t.job WHERE t.claim
UNION ALL
SELECT 0, 'clock', NULL, NULL, ${ms('clock_timestamp()')}, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL`,
    // The lease rows: a grant takes the lease (or, allow-all, a token only), a renewal pushes its
    // expiry, a release frees it and wakes the key's waiters.
    leases: `WITH u AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::text[], $6::float8[], $7::boolean[])
    AS u(key, op, owner, expires_ms, job, at_ms, clear_current)
), updated AS (
  UPDATE ${t.leases} l SET
    owner = CASE u.op WHEN 'take' THEN u.owner WHEN 'release' THEN NULL ELSE l.owner END,
    expires_at = CASE WHEN u.op IN ('take', 'renew') THEN ${at('u.expires_ms')}
      WHEN u.op = 'release' THEN NULL ELSE l.expires_at END,
    token = CASE WHEN u.op IN ('take', 'token') THEN l.token + 1 ELSE l.token END,
    current_job = CASE WHEN u.op = 'take' THEN u.job WHEN u.clear_current THEN NULL ELSE l.current_job END,
    current_at = CASE WHEN u.op = 'take' THEN ${at('u.at_ms')} WHEN u.clear_current THEN NULL ELSE l.current_at END
  FROM u WHERE l.key = u.key
  RETURNING l.key, l.token, u.op
)
SELECT key, token, CASE WHEN op = 'release' AND ${someoneWaitsOn(t, 'key')}
  THEN pg_notify(${literal(t.releaseChannel)}, key)::text END AS notified
FROM updated`,
    put: `INSERT INTO ${t.occurrences} AS o (key, job, scheduled_at, state, reason, token, owner, instance, started_at,
  ended_at, expires_at, cancelled, deadline, takeovers, error, run_trigger, actor, trigger_reason)
SELECT key, job, ${at('at_ms')}, state, reason, token, owner, instance, ${at('started_ms')}, ${at('ended_ms')},
  ${at('expires_ms')}, cancelled, ${at('deadline_ms')}, takeovers, error, run_trigger, actor, trigger_reason
FROM unnest($1::text[], $2::text[], $3::float8[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[],
  $9::float8[], $10::float8[], $11::float8[], $12::boolean[], $13::float8[], $14::int[], $15::text[], $16::text[],
  $17::text[], $18::text[])
  AS p(key, job, at_ms, state, reason, token, owner, instance, started_ms, ended_ms, expires_ms, cancelled,
    deadline_ms, takeovers, error, run_trigger, actor, trigger_reason)
ON CONFLICT (key, job, scheduled_at) DO UPDATE SET state = EXCLUDED.state, reason = EXCLUDED.reason,
  token = EXCLUDED.token, owner = EXCLUDED.owner, instance = EXCLUDED.instance,
  started_at = EXCLUDED.started_at, ended_at = EXCLUDED.ended_at, expires_at = EXCLUDED.expires_at,
  cancelled = EXCLUDED.cancelled, deadline = EXCLUDED.deadline, takeovers = EXCLUDED.takeovers,
  error = EXCLUDED.error, run_trigger = EXCLUDED.run_trigger, actor = EXCLUDED.actor,
  trigger_reason = EXCLUDED.trigger_reason`,
    drop: `DELETE FROM ${t.occurrences} o USING unnest($1::text[], $2::text[], $3::float8[]) AS d(key, job, at_ms)
WHERE o.key = d.key AND o.job = d.job AND o.scheduled_at = ${at('d.at_ms')}`,
  };
}

type Statements = ReturnType<typeof ledgerStatements>;

interface LeaseRow {
  key: string;
  owner: string | null;
  expires_at: number | null;
  current_job: string | null;
  current_at: number | null;
}

interface EntryRow {
  n: string;
  kind: 'entry' | 'oldest' | 'paused' | 'clock';
  total: string | null;
  job: string;
  scheduled_at: number;
  state: LedgerEntry['outcome'];
  reason: LedgerEntry['reason'] | null;
  token: string | null;
  owner: string | null;
  instance: string | null;
  started_at: number | null;
  ended_at: number | null;
  expires_at: number | null;
  cancelled: boolean;
  deadline: number | null;
  takeovers: number;
  error: string | null;
  run_trigger: LedgerEntry['trigger'] | null;
  actor: string | null;
  trigger_reason: string | null;
}

/** A row as the ledger's entry: the same conversion as every store's stored record. */
function entryOf(row: EntryRow): LedgerEntry {
  return ledgerEntryOf({
    job: row.job,
    scheduledAt: row.scheduled_at,
    outcome: row.state,
    reason: row.reason,
    token: row.token,
    instance: row.instance,
    startedAt: row.started_at,
    endedAt: row.ended_at,
    error: row.error,
    takeovers: row.takeovers,
    owner: row.owner,
    expiresAt: row.expires_at,
    cancelled: row.cancelled,
    queuedUntil: row.deadline,
    trigger: row.run_trigger,
    actor: row.actor,
    triggerReason: row.trigger_reason,
  });
}

/**
 * Decides and writes one batch of calls in one transaction on `client` (see above). Resolves with
 * each call's {@link Applied}, in order; a failed statement rolls the whole batch back.
 */
export async function applyLedgerBatch(
  client: PoolClient,
  sql: Statements,
  calls: readonly LedgerCall[],
): Promise<Applied[]> {
  const order = calls
    .map((_, index) => index)
    .sort((a, b) => compare(calls[a]!.target.key, calls[b]!.target.key));
  const keys = order.map((index) => calls[index]!.target.key);
  await client.query('BEGIN');
  try {
    await client.query(sql.create, [keys]);
    const leases = new Map<string, LeaseRow>();
    for (const row of (await client.query<LeaseRow>(sql.lock, [keys])).rows) leases.set(row.key, row);
    const targets = calls.map((call) => call.target);
    const currentOf = (target: ReadTarget) => {
      const lease = leases.get(target.key)!;
      return lease.current_job === target.job && lease.current_at !== null
        ? Number(lease.current_at)
        : undefined;
    };
    const { rows } = await client.query<EntryRow>(sql.read, [
      targets.map((target) => target.key),
      targets.map((target) => target.job),
      targets.map((target) => target.occurrences[0]!),
      targets.map((target) => currentOf(target) ?? null),
      targets.map((target) => target.operation === 'claimOccurrence'),
      targets.map((target) => target.trim?.retentionMs ?? null),
      targets.map((target) => target.trim?.recordLimit ?? null),
      targets.map((target) => target.running === true),
    ]);
    const now = Number(rows.find((row) => row.kind === 'clock')!.scheduled_at);
    const views = targets.map((target) => {
      const lease = leases.get(target.key)!;
      const current = currentOf(target);
      return {
        entries: new Map<number, LedgerEntry>(),
        oldest: [] as number[],
        total: 0,
        paused: false,
        lease:
          lease.owner !== null && lease.expires_at !== null && Number(lease.expires_at) > now
            ? { owner: lease.owner, expiresAt: Number(lease.expires_at) }
            : undefined,
        current,
      };
    });
    for (const row of rows) {
      if (row.kind === 'clock') continue;
      const view = views[Number(row.n) - 1]!;
      if (row.kind === 'paused') {
        view.paused = true;
        continue;
      }
      const entry = entryOf(row);
      view.entries.set(entry.scheduledAt, entry);
      if (row.kind === 'oldest') {
        view.oldest.push(entry.scheduledAt);
        view.total = Number(row.total);
      }
    }
    const changes = calls.map((call, index) => {
      const read = views[index]!;
      const view: LedgerView = {
        now,
        ...(read.lease === undefined ? {} : { lease: read.lease }),
        ...(read.current === undefined ? {} : { current: read.current }),
        paused: read.paused,
        entries: read.entries,
      };
      const oldest = [...new Set(read.oldest)].sort((a, b) => a - b);
      const stored: StoredView =
        call.target.trim === undefined ? { view } : { view, history: { total: read.total, oldest } };
      return call.decide(stored);
    });
    const tokens = await writeLeases(client, sql, calls, changes, now);
    await writeEntries(client, sql, calls, changes, tokens);
    const commit = await client.query('COMMIT');
    // COMMIT of a transaction in the failed state answers ROLLBACK instead of raising.
    if (commit.command === 'ROLLBACK') throw new Error('the transaction was rolled back at COMMIT');
    return calls.map((call, index) => {
      const token = changes[index]?.grant === undefined ? undefined : tokens.get(call.target.key);
      return token === undefined ? {} : { token };
    });
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** The lease rows' changes; the tokens of the grants, by key. */
async function writeLeases(
  client: PoolClient,
  sql: Statements,
  calls: readonly LedgerCall[],
  changes: ReadonlyArray<WriteChanges | undefined>,
  now: number,
): Promise<Map<string, number>> {
  const columns: unknown[][] = [[], [], [], [], [], [], []];
  const add = (...values: unknown[]) => {
    for (const [index, value] of values.entries()) columns[index]!.push(value);
  };
  for (const [index, change] of changes.entries()) {
    if (change === undefined) continue;
    const { key, job } = calls[index]!.target;
    const { grant, renewKey, releaseKey } = change;
    if (grant !== undefined) {
      const op = grant.holdsKey ? 'take' : 'token';
      add(key, op, grant.owner, now + grant.ttlMs, job, grant.scheduledAt, false);
    } else if (renewKey !== undefined) {
      add(key, 'renew', null, now + renewKey.ttlMs, null, null, false);
    } else if (releaseKey !== undefined) {
      add(key, 'release', null, null, null, null, change.current === releaseKey.scheduledAt);
    }
  }
  const tokens = new Map<string, number>();
  if (columns[0]!.length === 0) return tokens;
  const { rows } = await client.query<{ key: string; token: string }>(sql.leases, columns);
  for (const row of rows) tokens.set(row.key, Number(row.token));
  return tokens;
}

/** The occurrences put and dropped. */
async function writeEntries(
  client: PoolClient,
  sql: Statements,
  calls: readonly LedgerCall[],
  changes: ReadonlyArray<WriteChanges | undefined>,
  tokens: ReadonlyMap<string, number>,
): Promise<void> {
  const put: unknown[][] = Array.from({ length: 18 }, () => []);
  const drop: unknown[][] = [[], [], []];
  for (const [index, change] of changes.entries()) {
    if (change === undefined) continue;
    const { key, job } = calls[index]!.target;
    for (const { entry } of change.put) {
      const token = entry.scheduledAt === change.grant?.scheduledAt ? tokens.get(key) : entry.token;
      const values = [
        key,
        job,
        entry.scheduledAt,
        entry.outcome,
        entry.reason ?? null,
        token ?? null,
        entry.owner ?? null,
        entry.instance ?? null,
        entry.startedAt ?? null,
        entry.endedAt ?? null,
        entry.expiresAt ?? null,
        entry.cancelled === true,
        entry.outcome === 'queued' ? (entry.queuedUntil ?? null) : null,
        entry.takeovers ?? 0,
        // PostgreSQL text cannot hold NUL: a job's error message may.
        entry.error === undefined ? null : entry.error.replaceAll('\0', '\uFFFD'),
        entry.trigger ?? null,
        entry.actor === undefined ? null : entry.actor.replaceAll('\0', '\uFFFD'),
        entry.triggerReason === undefined ? null : entry.triggerReason.replaceAll('\0', '\uFFFD'),
      ];
      for (const [column, value] of values.entries()) put[column]!.push(value);
    }
    for (const entry of change.drop) {
      drop[0]!.push(key);
      drop[1]!.push(job);
      drop[2]!.push(entry.scheduledAt);
    }
  }
  if (put[0]!.length > 0) await client.query(sql.put, put);
  if (drop[0]!.length > 0) await client.query(sql.drop, drop);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
