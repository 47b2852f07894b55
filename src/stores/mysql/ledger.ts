import type { PoolConnection } from 'mysql2/promise';
import type { LedgerEntry, LedgerView } from '../../ledger/decide.ts';
import type { Applied, ReadTarget, StoredView, WriteChanges } from '../../ledger/engine.ts';
import { ledgerEntryOf } from '../../ledger/stored-entry.ts';
import { jsonRows, type MysqlTables, nowMs, nowUs } from './schema.ts';

/**
 * The run ledger's primitive on MySQL and MariaDB: one InnoDB transaction per batch of decisions
 * (at most one per key: the engine makes one decision at a time per key). It locks the keys' lease
 * rows (creating those missing) in key order, reads the views, lets each decision decide, writes
 * what they decided, and commits. Lease statements and other batches wait for those row locks, so
 * the decisions need no version. No statement here decides anything: they read and write rows.
 *
 * Each statement takes the whole batch as one JSON parameter (`JSON_TABLE`). The occurrences are
 * read without locks once the lease rows are locked (InnoDB's snapshot is taken at that first
 * plain read), and written by primary key only, updated where the read found them and inserted
 * where it did not, so no statement takes a gap lock that another batch could wait on.
 */

/** One decision waiting for its batch. */
export interface LedgerCall {
  readonly target: ReadTarget;
  readonly decide: (stored: StoredView) => WriteChanges | undefined;
}

const entryColumns = `scheduled_at_ms, state, reason, token, owner, instance, started_at_ms, ended_at_ms,
  expires_at_ms, cancelled, deadline_ms, takeovers, error, run_trigger, actor, trigger_reason`;
const prefixed = (alias: string) =>
  entryColumns
    .split(',')
    .map((column) => `${alias}.${column.trim()}`)
    .join(', ');
const entryRows: Array<[string, string]> = [
  ['lock_key', 'VARBINARY(1255)'],
  ['job', 'VARBINARY(1000)'],
  ['scheduled_at_ms', 'BIGINT'],
];

export function ledgerStatements(t: MysqlTables) {
  const keys = jsonRows('j', [['lock_key', 'VARBINARY(1255)']]);
  const put = jsonRows('p', [
    ...entryRows,
    ['state', 'VARCHAR(8)'],
    ['reason', 'VARCHAR(8)'],
    ['token', 'BIGINT'],
    ['owner', 'BLOB'],
    ['instance', 'BLOB'],
    ['started_at_ms', 'BIGINT'],
    ['ended_at_ms', 'BIGINT'],
    ['expires_at_ms', 'BIGINT'],
    ['cancelled', 'BOOLEAN'],
    ['deadline_ms', 'BIGINT'],
    ['takeovers', 'INT'],
    // Text columns of JSON_TABLE take the database's default character set (latin1 on many a
    // server): utf8mb4, or an error's text would lose what latin1 cannot hold.
    ['error', 'LONGTEXT CHARACTER SET utf8mb4'],
    ['run_trigger', 'VARCHAR(8)'],
    ['actor', 'LONGTEXT CHARACTER SET utf8mb4'],
    ['trigger_reason', 'LONGTEXT CHARACTER SET utf8mb4'],
  ]);
  const putColumns = `lock_key, job, ${entryColumns}`;
  return {
    // Creates the missing rows and locks every row, in key order. A duplicate takes the row's
    // exclusive lock (an INSERT IGNORE would take a shared one, and two batches upgrading theirs
    // would deadlock). A new key's first token is the clock in microseconds, as an acquire's.
    lock: `INSERT INTO ${t.leases} (lock_key, owner, token, expires_at_ms)
SELECT j.lock_key, NULL, ${nowUs} - 1, NULL FROM ${keys} ORDER BY j.lock_key
ON DUPLICATE KEY UPDATE token = token`,
    // The lease rows, and the clock, read once the rows are locked.
    leases: `SELECT j.n, l.owner, l.token, l.expires_at_ms, l.current_job, l.current_at_ms, ${nowMs} AS now_ms
FROM ${keys} JOIN ${t.leases} l ON l.lock_key = j.lock_key FOR UPDATE`,
    // Per target: the asked occurrence, the current one, the queue (a claim's), the pause (a
    // claim's), the running ones (a claim's with a concurrency above 1), and with a trim the record count and the oldest records: one more than the record
    // limit's excess, and every one past the retention.
    read: `WITH t AS (SELECT * FROM ${jsonRows('j', [
      ['lock_key', 'VARBINARY(1255)'],
      ['job', 'VARBINARY(1000)'],
      ['at_ms', 'BIGINT'],
      ['current_ms', 'BIGINT'],
      ['claim', 'BOOLEAN'],
      ['retention_ms', 'BIGINT'],
      ['record_limit', 'INT'],
      ['running', 'BOOLEAN'],
    ])})
SELECT t.n, 'entry' AS kind, NULL AS total, ${prefixed('o')}
FROM t JOIN ${t.occurrences} o ON o.lock_key = t.lock_key AND o.job = t.job
  AND (o.scheduled_at_ms = t.at_ms OR o.scheduled_at_ms = t.current_ms
    OR (t.claim AND o.deadline_ms IS NOT NULL AND o.state = 'queued')
    OR (t.running AND o.state = 'running'))
UNION ALL
SELECT t.n, 'oldest', x.total, ${prefixed('x')}
FROM t JOIN (
  SELECT o.*, COUNT(*) OVER (PARTITION BY o.lock_key, o.job) AS total,
    ROW_NUMBER() OVER (PARTITION BY o.lock_key, o.job ORDER BY o.scheduled_at_ms) AS position
  FROM ${t.occurrences} o JOIN t ON o.lock_key = t.lock_key AND o.job = t.job AND t.record_limit IS NOT NULL
) x ON x.lock_key = t.lock_key AND x.job = t.job
WHERE x.position <= x.total + 1 - t.record_limit OR x.scheduled_at_ms < ? - t.retention_ms
UNION ALL
SELECT t.n, 'paused', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL
FROM t JOIN ${t.pauses} p ON p.lock_key = t.lock_key AND p.job = t.job WHERE t.claim`,
    // The lease rows: a grant takes the lease (or, allow-all, a token only), a renewal pushes its
    // expiry, a release frees it.
    writeLeases: `UPDATE ${t.leases} l JOIN ${jsonRows('u', [
      ['lock_key', 'VARBINARY(1255)'],
      ['op', 'VARCHAR(8)'],
      ['owner', 'BLOB'],
      ['token', 'BIGINT'],
      ['expires_ms', 'BIGINT'],
      ['job', 'VARBINARY(1000)'],
      ['at_ms', 'BIGINT'],
      ['clear_current', 'BOOLEAN'],
    ])} ON l.lock_key = u.lock_key
SET l.owner = CASE u.op WHEN 'take' THEN u.owner WHEN 'release' THEN NULL ELSE l.owner END,
  l.expires_at_ms = CASE WHEN u.op IN ('take', 'renew') THEN u.expires_ms
    WHEN u.op = 'release' THEN NULL ELSE l.expires_at_ms END,
  l.token = u.token,
  l.current_job = CASE WHEN u.op = 'take' THEN u.job WHEN u.clear_current THEN NULL ELSE l.current_job END,
  l.current_at_ms = CASE WHEN u.op = 'take' THEN u.at_ms WHEN u.clear_current THEN NULL ELSE l.current_at_ms END`,
    insert: `INSERT INTO ${t.occurrences} (${putColumns}) SELECT ${putColumns} FROM ${put}`,
    update: `UPDATE ${t.occurrences} o JOIN ${put}
  ON o.lock_key = p.lock_key AND o.job = p.job AND o.scheduled_at_ms = p.scheduled_at_ms
SET ${entryColumns
      .split(',')
      .slice(1)
      .map((column) => `o.${column.trim()} = p.${column.trim()}`)
      .join(', ')}`,
    drop: `DELETE o FROM ${t.occurrences} o JOIN ${jsonRows('d', entryRows)}
  ON o.lock_key = d.lock_key AND o.job = d.job AND o.scheduled_at_ms = d.scheduled_at_ms`,
  };
}

type Statements = ReturnType<typeof ledgerStatements>;

interface LeaseRow {
  n: number;
  owner: Buffer | null;
  token: number | string;
  expires_at_ms: number | string | null;
  current_job: Buffer | null;
  current_at_ms: number | string | null;
  now_ms: number | string;
}

interface EntryRow {
  n: number;
  kind: 'entry' | 'oldest' | 'paused';
  total: number | string | null;
  scheduled_at_ms: number | string;
  state: LedgerEntry['outcome'];
  reason: LedgerEntry['reason'] | null;
  token: number | string | null;
  owner: Buffer | null;
  instance: Buffer | null;
  started_at_ms: number | string | null;
  ended_at_ms: number | string | null;
  expires_at_ms: number | string | null;
  cancelled: number;
  deadline_ms: number | string | null;
  takeovers: number;
  error: string | null;
  run_trigger: LedgerEntry['trigger'] | null;
  actor: string | null;
  trigger_reason: string | null;
}

/** A VARBINARY or BLOB value as the string it was written from (always UTF-8). */
export const text = (value: Buffer | string | null): string | null =>
  value === null ? null : typeof value === 'string' ? value : value.toString('utf8');

const number = (value: number | string | null): number | null => (value === null ? null : Number(value));

/**
 * Text for a JSON parameter: a lone surrogate (which JSON.stringify escapes and the server cannot
 * read) becomes U+FFFD, as the driver's UTF-8 encoding makes it in a plain parameter.
 */
const wellFormed = (value: string | undefined): string | null =>
  value === undefined ? null : value.replace(/\p{Cs}/gu, '\uFFFD');

/**
 * Decides and writes one batch of calls in one transaction on `connection` (see above), with
 * `prefix` before every key. Resolves with each call's {@link Applied}, in order; a failed
 * statement rolls the whole batch back, and so does `abandoned()` turning true before COMMIT (the
 * callers were told the batch failed).
 */
export async function applyLedgerBatch(
  connection: PoolConnection,
  sql: Statements,
  prefix: string,
  calls: readonly LedgerCall[],
  abandoned: () => boolean,
): Promise<Applied[]> {
  const targets = calls.map((call) => call.target);
  const keys = JSON.stringify(targets.map((target) => [prefix + target.key]));
  await connection.query('START TRANSACTION');
  try {
    await connection.execute(sql.lock, [keys]);
    const [leaseRows] = await connection.execute(sql.leases, [keys]);
    const leases: LeaseRow[] = [];
    for (const row of leaseRows as LeaseRow[]) leases[row.n - 1] = row;
    const now = Number(leases[0]!.now_ms);
    const currentOf = (index: number) => {
      const lease = leases[index]!;
      return text(lease.current_job) === targets[index]!.job && lease.current_at_ms !== null
        ? Number(lease.current_at_ms)
        : undefined;
    };
    const read = JSON.stringify(
      targets.map((target, index) => [
        prefix + target.key,
        target.job,
        target.occurrences[0]!,
        currentOf(index) ?? null,
        target.operation === 'claimOccurrence',
        target.trim?.retentionMs ?? null,
        target.trim?.recordLimit ?? null,
        target.running === true,
      ]),
    );
    const [rows] = await connection.execute(sql.read, [read, now]);
    const views = targets.map((_, index) => {
      const lease = leases[index]!;
      const expiresAt = number(lease.expires_at_ms);
      return {
        entries: new Map<number, LedgerEntry>(),
        oldest: [] as number[],
        total: 0,
        paused: false,
        lease:
          lease.owner !== null && expiresAt !== null && expiresAt > now
            ? { owner: text(lease.owner)!, expiresAt }
            : undefined,
        current: currentOf(index),
      };
    });
    for (const row of rows as EntryRow[]) {
      const view = views[row.n - 1]!;
      if (row.kind === 'paused') {
        view.paused = true;
        continue;
      }
      const entry = ledgerEntryOf({
        job: targets[row.n - 1]!.job,
        scheduledAt: row.scheduled_at_ms,
        outcome: row.state,
        reason: row.reason,
        token: row.token,
        instance: text(row.instance),
        startedAt: row.started_at_ms,
        endedAt: row.ended_at_ms,
        error: row.error,
        takeovers: row.takeovers,
        owner: text(row.owner),
        expiresAt: row.expires_at_ms,
        cancelled: Number(row.cancelled) === 1,
        queuedUntil: row.deadline_ms,
        trigger: row.run_trigger,
        actor: row.actor,
        triggerReason: row.trigger_reason,
      });
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
    const tokens = await writeLeases(connection, sql, prefix, calls, changes, leases, now);
    await writeEntries(connection, sql, prefix, calls, changes, tokens);
    if (abandoned()) throw new Error('abandoned: the bound ran out before COMMIT');
    await connection.query('COMMIT');
    return tokens.map((token) => (token === undefined ? {} : { token }));
  } catch (error) {
    await connection.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** The lease rows' changes; the token of each call's grant. */
async function writeLeases(
  connection: PoolConnection,
  sql: Statements,
  prefix: string,
  calls: readonly LedgerCall[],
  changes: ReadonlyArray<WriteChanges | undefined>,
  leases: readonly LeaseRow[],
  now: number,
): Promise<Array<number | undefined>> {
  const rows: unknown[][] = [];
  const tokens = calls.map((call, index) => {
    const change = changes[index];
    if (change === undefined) return undefined;
    const key = prefix + call.target.key;
    const token = Number(leases[index]!.token);
    const { grant, renewKey, releaseKey } = change;
    if (grant !== undefined) {
      const op = grant.holdsKey ? 'take' : 'token';
      const owner = wellFormed(grant.owner);
      rows.push([key, op, owner, token + 1, now + grant.ttlMs, call.target.job, grant.scheduledAt, false]);
      return token + 1;
    }
    if (renewKey !== undefined)
      rows.push([key, 'renew', null, token, now + renewKey.ttlMs, null, null, false]);
    else if (releaseKey !== undefined) {
      rows.push([key, 'release', null, token, null, null, null, change.current === releaseKey.scheduledAt]);
    }
    return undefined;
  });
  if (rows.length > 0) await connection.execute(sql.writeLeases, [JSON.stringify(rows)]);
  return tokens;
}

/** The occurrences put (updated where the read found them, else inserted) and dropped. */
async function writeEntries(
  connection: PoolConnection,
  sql: Statements,
  prefix: string,
  calls: readonly LedgerCall[],
  changes: ReadonlyArray<WriteChanges | undefined>,
  tokens: ReadonlyArray<number | undefined>,
): Promise<void> {
  const inserted: unknown[][] = [];
  const updated: unknown[][] = [];
  const dropped: unknown[][] = [];
  for (const [index, change] of changes.entries()) {
    if (change === undefined) continue;
    const key = prefix + calls[index]!.target.key;
    const { job } = calls[index]!.target;
    for (const { entry, before } of change.put) {
      const token = entry.scheduledAt === change.grant?.scheduledAt ? tokens[index] : entry.token;
      (before === undefined ? inserted : updated).push([
        key,
        job,
        entry.scheduledAt,
        entry.outcome,
        entry.reason ?? null,
        token ?? null,
        wellFormed(entry.owner),
        wellFormed(entry.instance),
        entry.startedAt ?? null,
        entry.endedAt ?? null,
        entry.expiresAt ?? null,
        entry.cancelled === true,
        entry.outcome === 'queued' ? (entry.queuedUntil ?? null) : null,
        entry.takeovers ?? 0,
        wellFormed(entry.error),
        entry.trigger ?? null,
        wellFormed(entry.actor),
        wellFormed(entry.triggerReason),
      ]);
    }
    for (const entry of change.drop) dropped.push([key, job, entry.scheduledAt]);
  }
  if (updated.length > 0) await connection.execute(sql.update, [JSON.stringify(updated)]);
  if (inserted.length > 0) await connection.execute(sql.insert, [JSON.stringify(inserted)]);
  if (dropped.length > 0) await connection.execute(sql.drop, [JSON.stringify(dropped)]);
}
