import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import pg from 'pg';
import {
  type ClaimRequest,
  isInvalidKeyError,
  isInvalidOptionError,
  isRejection,
  type OccurrenceLease,
} from 'resil';
import {
  isStaleTokenError,
  isStoreSetupError,
  isStoreUnavailableError,
  PostgresLockStore,
  postgresLockStoreDefaults,
  postgresLockStoreSql,
  withFencedTransaction,
} from 'resil/postgres';
import {
  describeInstanceRegistryConformance,
  describeLockStoreConformance,
  describeRunLedgerConformance,
} from 'resil/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrlForTests, uniqueSchemaName } from '../../support/postgres.ts';
import { freePort, waitUntil } from '../../support/processes.ts';

const databaseUrl = await databaseUrlForTests();
const schema = uniqueSchemaName('store');

let owners = 0;
/** A claim of `job`'s occurrence `scheduledAt` (on the lease key `job`) by a new owner. */
const request = (job: string, scheduledAt: number, overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
  job,
  key: job,
  scheduledAt,
  owner: `owner-${++owners}`,
  instance: 'host:1',
  ttlMs: 30_000,
  overlap: 'skip',
  startingDeadlineMs: 60_000,
  ...overrides,
});

async function granted(store: PostgresLockStore, claim: ClaimRequest): Promise<OccurrenceLease> {
  const result = await store.claimOccurrence(claim);
  if (result.status !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
  return result.lease;
}

/** Whole seconds, `ms` ago. */
const past = (ms: number) => Math.floor((Date.now() - ms) / 1_000) * 1_000;

describe.skipIf(!databaseUrl)('PostgresLockStore', () => {
  // Created at collection time so the conformance factories below can use it; no connection is
  // opened until the first query.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 20, connectionTimeoutMillis: 5_000 });
  let sharedStore: PostgresLockStore;

  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    sharedStore = new PostgresLockStore(pool, { schema });
    await sharedStore.ensureTables();
  });

  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  // One store per test, all on the same tables: the suites put their namespace in every key.
  describeLockStoreConformance('PostgresLockStore', () => new PostgresLockStore(pool, { schema }), {
    test: { describe, it, expect },
  });
  describeRunLedgerConformance('PostgresLockStore', () => new PostgresLockStore(pool, { schema }), {
    test: { describe, it, expect },
  });
  describeInstanceRegistryConformance('PostgresLockStore', () => new PostgresLockStore(pool, { schema }), {
    test: { describe, it, expect },
  });

  it('pins its defaults', () => {
    expect(postgresLockStoreDefaults).toEqual({
      table: 'resil_locks',
      createTable: true,
      timeout: 5_000,
      retentionMs: 7 * 24 * 3_600_000,
      historyLimit: 20,
    });
  });

  describe('tables', () => {
    it('creates its tables on first use, concurrently from many stores and pools without failing', async () => {
      const ownSchema = uniqueSchemaName('setup');
      await pool.query(`CREATE SCHEMA ${ownSchema}`);
      // Separate pools: separate sessions, like separate processes starting at once. Half of them
      // start with a lease, half with a claim.
      const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: databaseUrl, max: 2 }));
      try {
        const at = past(1_000);
        const tokens = await Promise.all(
          pools.map((each, index) => {
            const store = new PostgresLockStore(each, { schema: ownSchema, table: 'Locks' });
            return index % 2 === 0
              ? store.acquire(`key-${index}`, 'owner', 30_000)
              : granted(store, request(`job-${index}`, at)).then((lease) => lease.token);
          }),
        );
        expect(tokens.every((token) => Number.isSafeInteger(token))).toBe(true);
        const tables = await pool.query<{ table_name: string }>(
          'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
          [ownSchema],
        );
        expect(tables.rows.map((row) => row.table_name)).toEqual([
          'Locks',
          'Locks_circuits',
          'Locks_fences',
          'Locks_instances',
          'Locks_occurrences',
          'Locks_pauses',
          'Locks_rate_limits',
        ]);
        const functions = await pool.query<{ proname: string }>(
          `SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = $1 ORDER BY p.proname`,
          [ownSchema],
        );
        // The run ledger needs no function in the database: its decisions are made in the process.
        expect(functions.rows.map((row) => row.proname)).toEqual([]);
        // Setting up again (a new process) keeps the data.
        const again = new PostgresLockStore(pool, { schema: ownSchema, table: 'Locks' });
        await again.ensureTables();
        expect(await again.runHistory('job-1')).toMatchObject([
          { scheduledAt: at, outcome: 'running', token: tokens[1] },
        ]);
        expect(await again.claimOccurrence(request('job-1', at))).toMatchObject({
          status: 'wait',
          runningElsewhere: true,
        });
      } finally {
        await Promise.all(pools.map((each) => each.end()));
        await pool.query(`DROP SCHEMA ${ownSchema} CASCADE`);
      }
    });

    it('with createTable: false creates nothing and fails closed, naming the fix, while the table is missing', async () => {
      const ownSchema = uniqueSchemaName('nocreate');
      await pool.query(`CREATE SCHEMA ${ownSchema}`);
      try {
        const store = new PostgresLockStore(pool, { schema: ownSchema, createTable: false });
        const error = await store.acquire('key', 'owner', 1_000).catch((caught: unknown) => caught);
        // Not an outage: it lasts until someone creates the tables, as the message says.
        expect(isStoreSetupError(error)).toBe(true);
        expect(isRejection(error)).toBe(true);
        expect((error as Error).message).toMatch(/42P01.*postgresLockStoreSql\(\)/);
        const claimError = await store
          .claimOccurrence(request('job', past(1_000)))
          .catch((caught: unknown) => caught);
        expect(isStoreSetupError(claimError)).toBe(true);
        await expect(store.now()).rejects.toSatisfy(isStoreSetupError);
        const count = await pool.query(
          `SELECT (SELECT count(*) FROM information_schema.tables WHERE table_schema = $1)::int AS tables,
             (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
              WHERE n.nspname = $1)::int AS functions`,
          [ownSchema],
        );
        expect(count.rows[0]).toEqual({ tables: 0, functions: 0 });
        // The exported SQL is what the store needs.
        await pool.query(postgresLockStoreSql({ schema: ownSchema }));
        await pool.query(postgresLockStoreSql({ schema: ownSchema })); // idempotent
        expect(await store.now()).toBeGreaterThan(0);
        expect(await store.acquire('key', 'owner', 1_000)).toBeGreaterThan(0);
        const lease = await granted(store, request('job', past(1_000)));
        await store.finishOccurrence(lease, { outcome: 'success' });
        expect(await store.lastCompleted('job')).toBe(lease.scheduledAt);
      } finally {
        await pool.query(`DROP SCHEMA ${ownSchema} CASCADE`);
      }
    });

    it('creates dropped tables again (createTable: true) and retries the operation once', async () => {
      const ownSchema = uniqueSchemaName('dropped');
      await pool.query(`CREATE SCHEMA ${ownSchema}`);
      try {
        const store = new PostgresLockStore(pool, { schema: ownSchema });
        const first = await granted(store, request('job', past(2_000)));
        await store.finishOccurrence(first, { outcome: 'success' });
        const dropped = [
          'DROP TABLE resil_locks, resil_locks_occurrences',
          'DROP TABLE resil_locks_pauses, resil_locks_instances',
        ];
        for (const statement of dropped) {
          await pool.query(`SET search_path TO ${ownSchema}; ${statement}`);
          const lease = await granted(store, request('job', past(1_000) + Math.floor(Math.random() * 900)));
          await store.finishOccurrence(lease, { outcome: 'success' });
          expect(await store.acquire(`key-${statement.length}`, 'owner', 1_000)).toBeGreaterThan(0);
          expect(await store.pauseOf('job', { key: 'job' })).toBeUndefined();
          await store.registerInstance(
            {
              instance: 'i',
              host: 'h',
              pid: 1,
              version: 'v',
              startedAt: Date.now(),
              jobs: 1,
              clockOffsetMs: 0,
            },
            { ttlMs: 15_000 },
          );
          expect(await store.now()).toBeGreaterThan(0);
        }
      } finally {
        await pool.query(`DROP SCHEMA ${ownSchema} CASCADE`);
      }
    });

    it('a schema that does not exist is StoreSetupError naming the fix, also from now(), until the schema is created', async () => {
      const missing = uniqueSchemaName('missing');
      const store = new PostgresLockStore(pool, { schema: missing });
      try {
        for (const operation of [
          () => store.acquire('key', 'owner', 1_000),
          () => store.claimOccurrence(request('job', past(1_000))),
          () => store.now(),
          () => store.ensureTables(),
        ]) {
          const error = await operation().catch((caught: unknown) => caught);
          expect(isStoreSetupError(error), String(error)).toBe(true);
          expect(isStoreUnavailableError(error)).toBe(false);
          expect((error as Error).message).toMatch(
            /\(3F000\)\. The store's schema does not exist: create it \(CREATE SCHEMA\)/,
          );
        }
        await pool.query(`CREATE SCHEMA ${missing}`);
        expect(await store.now()).toBeGreaterThan(0);
        expect(await store.acquire('key', 'owner', 1_000)).toBeGreaterThan(0);
      } finally {
        await pool.query(`DROP SCHEMA IF EXISTS ${missing} CASCADE`);
      }
    });

    it('a dropped table the database user may not create again is StoreSetupError (42501) naming the fix, also from now()', async () => {
      const ownSchema = uniqueSchemaName('noddl');
      const role = `${ownSchema}_user`;
      await pool.query(`CREATE SCHEMA ${ownSchema}; CREATE ROLE ${role} LOGIN`);
      await pool.query(`GRANT USAGE, CREATE ON SCHEMA ${ownSchema} TO ${role}`);
      const url = new URL(databaseUrl!);
      url.username = role;
      url.password = '';
      const limited = new pg.Pool({ connectionString: url.href, max: 2 });
      try {
        // The store sets itself up as that user, then loses a table and the right to create one.
        const store = new PostgresLockStore(limited, { schema: ownSchema });
        expect(await store.acquire('key', 'owner', 1_000)).toBeGreaterThan(0);
        await pool.query(
          `DROP TABLE ${ownSchema}.resil_locks; REVOKE CREATE ON SCHEMA ${ownSchema} FROM ${role}`,
        );
        const error = await store.acquire('key', 'owner', 1_000).catch((caught: unknown) => caught);
        expect(isStoreSetupError(error), String(error)).toBe(true);
        expect((error as Error).message).toMatch(
          /\(42501\)\. The database user may not set the store up: grant it USAGE and CREATE on the schema/,
        );
        await expect(store.now()).rejects.toSatisfy(isStoreSetupError);
        // Given the right back: now() sets the store up again and answers, and so does acquire.
        await pool.query(`GRANT CREATE ON SCHEMA ${ownSchema} TO ${role}`);
        expect(await store.now()).toBeGreaterThan(0);
        expect(await store.acquire('key-2', 'owner', 1_000)).toBeGreaterThan(0);
      } finally {
        await limited.end();
        await pool.query(`DROP SCHEMA ${ownSchema} CASCADE; DROP OWNED BY ${role}; DROP ROLE ${role}`);
      }
    });

    it('sets up over tables and functions of an earlier version: its claim function (nine parameters) does not get in the way', async () => {
      const ownSchema = uniqueSchemaName('upgrade');
      await pool.query(`CREATE SCHEMA ${ownSchema}`);
      try {
        await pool.query(`CREATE FUNCTION ${ownSchema}.resil_locks_claim(
            p_key text, p_job text, p_at_ms float8, p_owner text, p_instance text, p_ttl_ms float8,
            p_overlap text, p_deadline_ms float8, p_manual boolean,
            OUT status text, OUT retry_at float8, OUT running_elsewhere boolean, OUT skip_reason text,
            OUT lease_at float8, OUT lease_token bigint, OUT takeover boolean
          ) LANGUAGE sql AS $$ SELECT 'skipped', NULL::float8, NULL::boolean, 'overlap', NULL::float8,
            NULL::bigint, NULL::boolean $$`);
        const store = new PostgresLockStore(pool, { schema: ownSchema });
        const lease = await granted(store, request('job', past(1_000)));
        await store.finishOccurrence(lease, { outcome: 'success' });
        expect(await store.lastCompleted('job')).toBe(lease.scheduledAt);
      } finally {
        await pool.query(`DROP SCHEMA ${ownSchema} CASCADE`);
      }
    });

    it("prints in docs/postgres.md's set-up section exactly the SQL postgresLockStoreSql() returns", () => {
      const readme = readFileSync(
        fileURLToPath(new URL('../../../docs/postgres.md', import.meta.url)),
        'utf8',
      );
      const intro = 'returns for your options, so you can also run that:\n\n```sql\n';
      const start = readme.indexOf(intro);
      expect(start).toBeGreaterThan(0);
      const block = readme.slice(start + intro.length, readme.indexOf('```\n', start + intro.length));
      expect(block).toBe(postgresLockStoreSql());
    });

    it('quotes identifiers: a table name with quotes, spaces, a semicolon and a dollar quote is just a name', async () => {
      const table = 'odd "name"; $resil$ DROP TABLE x; --';
      const store = new PostgresLockStore(pool, { schema, table });
      expect(await store.acquire('key', 'owner', 30_000)).toBeGreaterThan(0);
      const found = await pool.query(
        'SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2',
        [schema, table],
      );
      expect(found.rows[0].n).toBe(1);
      // The functions, whose bodies name the tables, work too.
      const lease = await granted(store, request('odd-job', past(1_000)));
      expect(await store.renewOccurrence(lease, 30_000)).toBe(true);
      await store.finishOccurrence(lease, { outcome: 'success' });
      expect(await store.runHistory('odd-job')).toMatchObject([{ outcome: 'success', token: lease.token }]);
      expect(postgresLockStoreSql({ table })).toContain('"odd ""name""; $resil$ DROP TABLE x; --"');
    });

    it('passes keys, owners, jobs, instances and errors as parameters, never as SQL', async () => {
      const key = "k'); DELETE FROM resil_locks; --";
      const owner = "o' OR '1'='1";
      const token = await sharedStore.acquire(key, owner, 30_000);
      expect(await sharedStore.inspect(key)).toMatchObject({ owner, token });
      expect(await sharedStore.renew(key, "anything' OR 'x'='x", 30_000)).toBe(false);
      const job = "j'); DELETE FROM resil_locks_occurrences; --";
      const claim = request(job, past(1_000), {
        key: '$$; DROP TABLE resil_locks; $$',
        owner: "o'$$",
        instance: "host'; --",
      });
      const lease = await granted(sharedStore, claim);
      expect(lease).toMatchObject({ job, key: claim.key, owner: claim.owner });
      await sharedStore.finishOccurrence(lease, { outcome: 'failure', error: "e'); DROP TABLE x; --" });
      expect(await sharedStore.runHistory(job, { key: claim.key })).toMatchObject([
        { job, instance: "host'; --", outcome: 'failure', error: "e'); DROP TABLE x; --" },
      ]);
    });

    it('refuses a key, job or resource it cannot keep (NUL, over 1000 bytes) with InvalidKeyError, not as an outage', async () => {
      // Incompressible: PostgreSQL compresses a long value before the btree's ~2700-byte row limit.
      const long = randomBytes(1_500).toString('hex');
      const refusals: Array<[string, () => Promise<unknown>, string]> = [
        ['acquire, a long key', () => sharedStore.acquire(long, 'o', 30_000), 'key'],
        ['acquire, a NUL', () => sharedStore.acquire('a\u0000b', 'o', 30_000), 'key'],
        ['renew', () => sharedStore.renew(long, 'o', 30_000), 'key'],
        ['inspect', () => sharedStore.inspect('a\u0000b'), 'key'],
        [
          'claim, a long key',
          () => sharedStore.claimOccurrence(request('job', past(1_000), { key: long })),
          'request.key',
        ],
        [
          'claim, a NUL in the job',
          () => sharedStore.claimOccurrence(request('j\u0000b', past(1_000))),
          'request.job',
        ],
        ['runHistory', () => sharedStore.runHistory(long), 'job'],
        ['pauseJob', () => sharedStore.pauseJob('job', { key: long, by: 'me' }), 'key'],
        ['withFencedTransaction', () => withFencedTransaction(pool, long, 1, async () => {}), 'resource'],
      ];
      for (const [what, operation, option] of refusals) {
        const error = await operation().then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(isInvalidKeyError(error), `${what}: ${String(error)}`).toBe(true);
        expect(error, what).toMatchObject({ store: 'PostgresLockStore', option });
        expect(isStoreUnavailableError(error)).toBe(false);
      }
      expect(() => sharedStore.checkKey(long)).toThrow(
        `PostgresLockStore cannot keep the key "${long.slice(0, 20)}`,
      );
      expect(() => sharedStore.checkKey(long)).toThrow('it is 3000 bytes of UTF-8; the limit is 1000.');
      expect(() => sharedStore.checkKey('a\u0000b')).toThrow('it contains a NUL character');
      // 1000 bytes fit, as key and job name of one occurrence.
      const atLimit = 'é'.repeat(500);
      expect(await sharedStore.acquire(atLimit, 'o', 30_000)).toBeGreaterThan(0);
      const lease = await granted(
        sharedStore,
        request(atLimit, past(1_000), { key: `k${'é'.repeat(499)}x` }),
      );
      await sharedStore.finishOccurrence(lease, { outcome: 'success' });
    });

    it('rejects bad options, naming the option and the value', () => {
      const cases: [object, string][] = [
        [{ table: '' }, 'table'],
        [{ table: 'x'.repeat(51) }, 'table'],
        [{ schema: 'bad\0name' }, 'schema'],
        [{ schema: 'y'.repeat(64) }, 'schema'],
        [{ timeout: '5 parsecs' }, 'timeout'],
        [{ timeout: 0 }, 'timeout'],
        [{ createTable: 'yes' }, 'createTable'],
      ];
      for (const [options, option] of cases) {
        let caught: unknown;
        try {
          new PostgresLockStore(pool, options as never);
        } catch (error) {
          caught = error;
        }
        expect(isInvalidOptionError(caught), option).toBe(true);
        expect((caught as { option: string }).option).toBe(option);
      }
      expect(() => new PostgresLockStore(undefined as never)).toThrow(/pool/);
    });
  });

  describe('tokens and leases', () => {
    it('keeps the row and its token on release: the lease is cleared, the token keeps increasing', async () => {
      const first = (await sharedStore.acquire('kept', 'a', 30_000))!;
      await sharedStore.release('kept', 'a');
      const row = await pool.query(
        `SELECT owner, token, expires_at FROM ${schema}.resil_locks WHERE key = $1`,
        ['kept'],
      );
      expect(row.rows).toEqual([{ owner: null, token: String(first), expires_at: null }]);
      expect(await sharedStore.acquire('kept', 'b', 30_000)).toBe(first + 1);
    });

    it("seeds a new key's token from the database clock, so a deleted row never brings tokens back", async () => {
      const first = (await sharedStore.acquire('deleted', 'a', 30_000))!;
      const databaseNowMs = await sharedStore.now();
      expect(Math.abs(first / 1_000 - databaseNowMs)).toBeLessThan(5_000);
      await pool.query(`DELETE FROM ${schema}.resil_locks WHERE key = $1`, ['deleted']);
      expect(await sharedStore.acquire('deleted', 'b', 30_000)).toBeGreaterThan(first);
    });

    it('judges expiry by the database clock: a lease whose expires_at the database has passed is free', async () => {
      await sharedStore.acquire('db-clock', 'a', 60_000);
      // Move the stored expiry to just behind the database's now(): the local clock is irrelevant.
      await pool.query(
        `UPDATE ${schema}.resil_locks SET expires_at = now() - interval '1 millisecond' WHERE key = $1`,
        ['db-clock'],
      );
      expect(await sharedStore.inspect('db-clock')).toBeUndefined();
      expect(await sharedStore.renew('db-clock', 'a', 60_000)).toBe(false);
      expect(await sharedStore.acquire('db-clock', 'b', 60_000)).toBeDefined();
    });
  });

  describe('run ledger', () => {
    const occurrences = `${schema}.resil_locks_occurrences`;

    /** Ends the occurrence's lease by the database clock, as if its holder had stopped renewing. */
    async function expire(key: string, job: string, scheduledAt: number): Promise<void> {
      await pool.query(
        `UPDATE ${schema}.resil_locks SET expires_at = now() - interval '1 millisecond'
         WHERE key = $1 AND owner IS NOT NULL`,
        [key],
      );
      await pool.query(
        `UPDATE ${occurrences} SET expires_at = now() - interval '1 millisecond'
         WHERE key = $1 AND job = $2 AND scheduled_at = to_timestamp($3::float8 / 1000)`,
        [key, job, scheduledAt],
      );
    }

    it('records a failure whose error text holds a NUL (which PostgreSQL text cannot), with U+FFFD in its place', async () => {
      const lease = await granted(sharedStore, request('nul-error', past(2_000)));
      await sharedStore.finishOccurrence(lease, { outcome: 'failure', error: 'boom\0here' });
      expect(await sharedStore.runHistory('nul-error')).toMatchObject([
        { outcome: 'failure', error: 'boom\uFFFDhere' },
      ]);
    });

    it('250 concurrent claims are 3 transactions (at most 100 decisions each, rows locked in key order), and so are their finishes; each gets its own answer', async () => {
      let transactions = 0;
      // The pool as the store sees it: every transaction (a client taken) is counted.
      const counting = new Proxy(pool, {
        get(target, property, receiver) {
          // pg's own query() connects with a callback: that one is not a transaction of the store's.
          if (property === 'connect') {
            return async (callback?: unknown) => {
              if (callback !== undefined) return target.connect(callback as never);
              transactions++;
              return target.connect();
            };
          }
          return Reflect.get(target, property, receiver);
        },
      });
      const store = new PostgresLockStore(counting, { schema });
      await store.ensureTables();
      const jobs = Array.from({ length: 250 }, (_, index) => `batch-${String(999 - index).padStart(4, '0')}`);
      const at = past(2_000);
      transactions = 0;
      const [claims, others] = await Promise.all([
        Promise.all(jobs.map((job) => store.claimOccurrence(request(job, at)))),
        // Another instance claiming the same occurrences at once, through its own store, in the
        // opposite order: batches locking rows in the order they were issued would deadlock.
        Promise.all(
          [...jobs]
            .reverse()
            .map((job) => sharedStore.claimOccurrence(request(job, at, { instance: 'host:2' }))),
        ).then((answers) => answers.reverse()),
      ]);
      expect(transactions).toBe(3);
      const winners = claims.map(
        (claim, index) =>
          (claim.status === 'granted' ? 1 : 0) + (others[index]!.status === 'granted' ? 1 : 0),
      );
      expect(winners).toEqual(jobs.map(() => 1));
      for (const [index, claim] of claims.entries()) {
        if (claim.status === 'granted') expect(claim.lease.job).toBe(jobs[index]);
        else expect(claim).toMatchObject({ status: 'wait', runningElsewhere: true });
      }
      transactions = 0;
      const mine = claims.flatMap((claim) => (claim.status === 'granted' ? [claim.lease] : []));
      await Promise.all(
        mine.map((lease, index) =>
          store.finishOccurrence(
            lease,
            index === 0 ? { outcome: 'failure', error: 'boom' } : { outcome: 'success' },
          ),
        ),
      );
      expect(transactions).toBe(Math.ceil(mine.length / 100));
      if (mine.length > 0) {
        expect(await store.runHistory(mine[0]!.job)).toMatchObject([{ outcome: 'failure', error: 'boom' }]);
        expect(await store.runHistory(mine.at(-1)!.job)).toMatchObject([{ outcome: 'success' }]);
      }
    });

    it('grants exactly one of 20 concurrent claims of one occurrence from separate clients', async () => {
      const job = 'race-job';
      const at = past(3_000);
      const racePool = new pg.Pool({ connectionString: databaseUrl, max: 21 });
      const clients = await Promise.all(Array.from({ length: 21 }, () => racePool.connect()));
      const blocker = clients.pop()!;
      try {
        // One store per client: each claim is its own session, as on separate instances.
        const stores = clients.map(
          (client) => new PostgresLockStore(client as unknown as pg.Pool, { schema }),
        );
        const race = (scheduledAt: number) =>
          Promise.all(
            stores.map((store, index) =>
              store.claimOccurrence(request(job, scheduledAt, { instance: `host:${index}` })),
            ),
          );
        const grantsOf = (results: Awaited<ReturnType<typeof race>>) =>
          results.flatMap((result) => (result.status === 'granted' ? [result.lease] : []));

        // A key no claim has seen yet: they race to create its row.
        const first = await race(at);
        const [lease] = grantsOf(first);
        expect(grantsOf(first)).toHaveLength(1);
        expect(first.filter((result) => result.status === 'wait' && result.runningElsewhere)).toHaveLength(
          19,
        );
        expect(await sharedStore.inspect(job)).toMatchObject({ owner: lease!.owner, token: lease!.token });
        expect(await sharedStore.runHistory(job)).toEqual([
          expect.objectContaining({ outcome: 'running', token: lease!.token, scheduledAt: at }),
        ]);
        await sharedStore.finishOccurrence(lease!, { outcome: 'success' });

        // All 20 wait for the key's row lock, then go at once.
        await blocker.query('BEGIN');
        await blocker.query(`SELECT 1 FROM ${schema}.resil_locks WHERE key = $1 FOR UPDATE`, [job]);
        const racing = race(at + 1_000);
        await waitUntil('20 claims waiting for the row lock', async () => {
          const waiting = await pool.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`,
            [`${schema}"."resil_locks" WHERE key = ANY`],
          );
          return waiting.rows[0].n === 20;
        });
        await blocker.query('COMMIT');
        const second = await racing;
        const [next] = grantsOf(second);
        expect(grantsOf(second)).toHaveLength(1);
        expect(second.filter((result) => result.status === 'wait' && result.runningElsewhere)).toHaveLength(
          19,
        );
        // No other claim took a token.
        expect(next!.token).toBe(lease!.token + 1);
        expect(await sharedStore.claimOccurrence(request(job, at))).toEqual({
          status: 'skipped',
          reason: 'already-done',
        });
      } finally {
        for (const client of [...clients, blocker]) client.release();
        await racePool.end();
      }
    });

    it('fences a finish by an earlier holder: StaleTokenError with the highest token, the record untouched', async () => {
      const job = 'stale-job';
      const at = past(2_000);
      const first = await granted(sharedStore, request(job, at));
      await expire(job, job, at);
      const takeover = await sharedStore.claimOccurrence(request(job, at, { instance: 'host:2' }));
      expect(takeover).toMatchObject({ status: 'granted', takeover: true, lease: { scheduledAt: at } });
      const second = (takeover as { lease: OccurrenceLease }).lease;
      expect(second.token).toBe(first.token + 1);
      expect(await sharedStore.renewOccurrence(first, 30_000)).toBe(false);
      const before = await sharedStore.runHistory(job);
      expect(before).toEqual([
        {
          job,
          scheduledAt: at,
          outcome: 'running',
          token: second.token,
          instance: 'host:2',
          startedAt: expect.any(Number),
          takeovers: 1,
        },
      ]);
      const error = await sharedStore
        .finishOccurrence(first, { outcome: 'success' })
        .catch((caught: unknown) => caught);
      expect(isStaleTokenError(error)).toBe(true);
      expect(error).toMatchObject({
        code: 'STALE_TOKEN',
        resource: job,
        token: first.token,
        highestToken: second.token,
      });
      expect(await sharedStore.runHistory(job)).toEqual(before);
      expect(await sharedStore.inspect(job)).toMatchObject({ owner: second.owner, token: second.token });
      // A refused finish by the lease's owner still releases its lease.
      const forged = await sharedStore
        .finishOccurrence({ ...second, token: second.token - 1 }, { outcome: 'success' })
        .catch((caught: unknown) => caught);
      expect(forged).toMatchObject({ code: 'STALE_TOKEN', highestToken: second.token });
      expect(await sharedStore.inspect(job)).toBeUndefined();
      expect(await sharedStore.runHistory(job)).toEqual(before);
      expect(await sharedStore.lastCompleted(job)).toBeUndefined();
    });

    it('fences concurrent finishes of a taken-over occurrence: only the latest holder is recorded', async () => {
      const job = 'racing-job';
      const at = past(2_000);
      const leases = [await granted(sharedStore, request(job, at))];
      for (let index = 1; index < 10; index++) {
        await expire(job, job, at);
        leases.push(await granted(sharedStore, request(job, at, { instance: `host:${index}` })));
      }
      const tokens = leases.map((lease) => lease.token);
      expect(tokens).toEqual(tokens.map((_, index) => tokens[0]! + index));
      const latest = leases.at(-1)!;
      const results = await Promise.allSettled(
        leases.map((lease, index) =>
          sharedStore.finishOccurrence(lease, { outcome: 'failure', error: `run ${index}` }),
        ),
      );
      expect(results.map((result) => result.status)).toEqual([...Array(9).fill('rejected'), 'fulfilled']);
      for (const result of results.slice(0, 9)) {
        expect((result as PromiseRejectedResult).reason).toMatchObject({
          code: 'STALE_TOKEN',
          highestToken: latest.token,
        });
      }
      expect(await sharedStore.runHistory(job)).toMatchObject([
        { outcome: 'failure', error: 'run 9', token: latest.token, instance: 'host:9', takeovers: 9 },
      ]);
    });

    it('round-trips epoch milliseconds exactly and returns only the public fields, numbers as numbers', async () => {
      const job = 'exact-job';
      const scheduledAt = past(5_000) + 123;
      const lease = await granted(sharedStore, request(job, scheduledAt, { instance: 'host:7' }));
      expect(lease).toEqual({
        job,
        key: job,
        scheduledAt,
        owner: expect.any(String),
        token: expect.any(Number),
        overlap: 'skip',
      });
      await sharedStore.finishOccurrence(lease, { outcome: 'failure', error: 'boom' });
      const stored = await pool.query(
        `SELECT scheduled_at = to_timestamp($3::float8 / 1000) AS exact,
           (extract(epoch FROM started_at) * 1000)::float8 AS started,
           (extract(epoch FROM ended_at) * 1000)::float8 AS ended
         FROM ${occurrences} WHERE key = $1 AND job = $2`,
        [job, job, scheduledAt],
      );
      expect(stored.rows).toHaveLength(1);
      expect(stored.rows[0].exact).toBe(true);
      const history = await sharedStore.runHistory(job);
      expect(history).toEqual([
        {
          job,
          scheduledAt,
          outcome: 'failure',
          token: lease.token,
          instance: 'host:7',
          startedAt: expect.any(Number),
          endedAt: expect.any(Number),
          error: 'boom',
        },
      ]);
      const [record] = history;
      // The database keeps microseconds; the record has whole milliseconds, truncated.
      expect(record!.startedAt!).toBe(Math.floor(stored.rows[0].started));
      expect(record!.endedAt!).toBe(Math.floor(stored.rows[0].ended));
      expect(record!.endedAt!).toBeGreaterThanOrEqual(record!.startedAt!);
      expect(Math.abs(record!.endedAt! - (await sharedStore.now()))).toBeLessThan(5_000);

      // A skipped occurrence has no token, start or holder.
      expect(
        await sharedStore.claimOccurrence(request(job, scheduledAt + 1, { startingDeadlineMs: 0 })),
      ).toEqual({
        status: 'skipped',
        reason: 'missed',
      });
      expect((await sharedStore.runHistory(job, { limit: 1 }))[0]).toEqual({
        job,
        scheduledAt: scheduledAt + 1,
        outcome: 'skipped',
        reason: 'missed',
        instance: 'host:1',
        endedAt: expect.any(Number),
      });
      const success = await granted(sharedStore, request(job, scheduledAt + 2));
      await sharedStore.finishOccurrence(success, { outcome: 'success' });
      expect(await sharedStore.lastCompleted(job)).toBe(scheduledAt + 2);
    });

    it("takes over, or fails, a running occurrence that lost the key's lease to a plain acquire after it expired", async () => {
      const job = 'orphan-job';
      const at = past(2_000);
      const first = await granted(sharedStore, request(job, at));
      await expire(job, job, at);
      const plain = await sharedStore.acquire(job, 'plain-owner', 30_000);
      expect(plain).toBe(first.token + 1);
      expect((await sharedStore.runHistory(job))[0]).toMatchObject({
        outcome: 'running',
        token: first.token,
      });
      await sharedStore.release(job, 'plain-owner');
      // The key no longer names the occurrence: its own next claim judges its lease.
      const takeover = await sharedStore.claimOccurrence(request(job, at));
      expect(takeover).toMatchObject({ status: 'granted', takeover: true, lease: { scheduledAt: at } });
      const second = (takeover as { lease: OccurrenceLease }).lease;
      expect(second.token).toBe(plain! + 1);
      await expire(job, job, at);
      expect(await sharedStore.acquire(job, 'plain-owner', 30_000)).toBe(second.token + 1);
      await sharedStore.release(job, 'plain-owner');
      // Past the takeover window (the lease expired longer than the starting deadline ago): failed.
      expect(await sharedStore.claimOccurrence(request(job, at, { startingDeadlineMs: 0 }))).toEqual({
        status: 'skipped',
        reason: 'already-done',
      });
      const [record] = await sharedStore.runHistory(job);
      expect(record).toMatchObject({ outcome: 'failure', token: second.token, takeovers: 1 });
      expect(record!.error).toMatch(/^abandoned/);
    });

    it('keeps each key apart: history and lastCompleted default the key to the job', async () => {
      const job = 'keyed-job';
      const at = past(2_000);
      const own = await granted(sharedStore, request(job, at));
      const shared = await granted(sharedStore, request(job, at, { key: 'keyed-shared' }));
      await sharedStore.finishOccurrence(own, { outcome: 'success' });
      await sharedStore.finishOccurrence(shared, { outcome: 'failure' });
      expect(await sharedStore.runHistory(job)).toMatchObject([{ outcome: 'success', token: own.token }]);
      expect(await sharedStore.runHistory(job, { key: 'keyed-shared' })).toMatchObject([
        { outcome: 'failure', token: shared.token },
      ]);
      expect(await sharedStore.lastCompleted(job)).toBe(at);
      expect(await sharedStore.lastCompleted(job, { key: 'keyed-shared' })).toBeUndefined();
    });

    it('trims on finish: occurrences older than the retention (not running ones), then past the record limit', async () => {
      const job = 'trim-job';
      await pool.query(
        `INSERT INTO ${occurrences} (key, job, scheduled_at, state, token, owner, instance, started_at, expires_at)
         VALUES ($1, $1, now() - interval '9 days', 'running', 1, 'old-owner', 'host:1', now(), now() + interval '1 hour')`,
        [job],
      );
      await pool.query(
        `INSERT INTO ${occurrences} (key, job, scheduled_at, state, ended_at)
         VALUES ($1, $1, now() - interval '8 days', 'success', now()),
           ($1, $1, now() - interval '6 days', 'success', now())`,
        [job],
      );
      const first = await granted(sharedStore, request(job, past(50_000)));
      await sharedStore.finishOccurrence(first, { outcome: 'success' });
      // The default retention is 7 days.
      expect((await sharedStore.runHistory(job)).map((record) => record.outcome)).toEqual([
        'success',
        'success',
        'running',
      ]);
      // An explicit one; the running occurrence stays whatever its age.
      const second = await granted(sharedStore, request(job, past(30_000)));
      await sharedStore.finishOccurrence(second, { outcome: 'success' }, { retentionMs: 3_600_000 });
      expect((await sharedStore.runHistory(job)).map((record) => record.scheduledAt)).toEqual([
        second.scheduledAt,
        first.scheduledAt,
        expect.any(Number),
      ]);

      // Past the record limit (100 by default), the oldest go, but not a running one nor one
      // younger than keepWithinMs (1 min by default).
      await pool.query(
        `INSERT INTO ${occurrences} (key, job, scheduled_at, state, reason, ended_at)
         SELECT $1, $1, now() - interval '2 minutes' - n * interval '1 second', 'skipped', 'overlap', now()
         FROM generate_series(1, 10000) AS n`,
        [job],
      );
      const third = await granted(sharedStore, request(job, past(10_000)));
      await sharedStore.finishOccurrence(third, { outcome: 'success' });
      const kept = await pool.query(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE state = 'running')::int AS running
         FROM ${occurrences} WHERE key = $1 AND job = $1`,
        [job],
      );
      expect(kept.rows[0]).toEqual({ n: 101, running: 1 });
      expect((await sharedStore.runHistory(job, { limit: 3 })).map((record) => record.scheduledAt)).toEqual([
        third.scheduledAt,
        second.scheduledAt,
        first.scheduledAt,
      ]);
    });

    it("trims on a recorded skip too, by the request's retention (7 days by default)", async () => {
      const job = 'skip-trim-job';
      await pool.query(
        `INSERT INTO ${occurrences} (key, job, scheduled_at, state, ended_at)
         VALUES ($1, $1, now() - interval '8 days', 'success', now()),
           ($1, $1, now() - interval '2 hours', 'success', now())`,
        [job],
      );
      const missed = past(120_000);
      expect(await sharedStore.claimOccurrence(request(job, missed, { startingDeadlineMs: 0 }))).toEqual({
        status: 'skipped',
        reason: 'missed',
      });
      expect((await sharedStore.runHistory(job)).map((record) => record.outcome)).toEqual([
        'skipped',
        'success',
      ]);
      // An explicit one, on an overlap skip; the running occurrence stays.
      const running = await granted(sharedStore, request(job, past(50_000)));
      const overlapped = past(40_000);
      expect(await sharedStore.claimOccurrence(request(job, overlapped, { retentionMs: 3_600_000 }))).toEqual(
        {
          status: 'skipped',
          reason: 'overlap',
        },
      );
      expect((await sharedStore.runHistory(job)).map((record) => record.scheduledAt)).toEqual([
        overlapped,
        running.scheduledAt,
        missed,
      ]);
    });

    it("refuses a renewal when the key's live lease is not the holder's, and renews nothing", async () => {
      const job = 'renew-key-job';
      const at = past(2_000);
      const lease = await granted(sharedStore, request(job, at));
      const expiries = async () =>
        (
          await pool.query(
            `SELECT (SELECT expires_at FROM ${schema}.resil_locks WHERE key = $1) AS key,
               (SELECT expires_at FROM ${occurrences} WHERE key = $1 AND job = $1) AS occurrence`,
            [job],
          )
        ).rows[0];
      // The key's lease goes to someone else while the occurrence's own lease still runs.
      await pool.query(`UPDATE ${schema}.resil_locks SET owner = 'someone-else' WHERE key = $1`, [job]);
      const before = await expiries();
      expect(await sharedStore.renewOccurrence(lease, 60_000)).toBe(false);
      expect(await expiries()).toEqual(before);
      // The key is the holder's again, but its lease has expired.
      await pool.query(
        `UPDATE ${schema}.resil_locks SET owner = $2, expires_at = now() - interval '1 millisecond'
         WHERE key = $1`,
        [job, lease.owner],
      );
      const expired = await expiries();
      expect(await sharedStore.renewOccurrence(lease, 60_000)).toBe(false);
      expect(await expiries()).toEqual(expired);
      // An allow-all lease is the occurrence's own: the key's is not asked.
      await pool.query(
        `UPDATE ${schema}.resil_locks SET owner = 'someone-else', expires_at = now() + interval '1 minute' WHERE key = $1`,
        [job],
      );
      const own = await granted(sharedStore, request(job, at + 1_000, { overlap: 'allow-all' }));
      expect(await sharedStore.renewOccurrence(own, 60_000)).toBe(true);
    });

    it('a finish replaces an earlier error or skip reason with its own outcome', async () => {
      const job = 'refinish-job';
      const at = past(2_000);
      const lease = await granted(sharedStore, request(job, at));
      await expire(job, job, at);
      // Past the takeover window, a claim fails it as abandoned; then its holder reports, late.
      expect(await sharedStore.claimOccurrence(request(job, at, { startingDeadlineMs: 0 }))).toEqual({
        status: 'skipped',
        reason: 'already-done',
      });
      expect((await sharedStore.runHistory(job))[0]!.error).toMatch(/^abandoned/);
      await sharedStore.finishOccurrence(lease, { outcome: 'success' });
      expect(await sharedStore.runHistory(job)).toEqual([
        {
          job,
          scheduledAt: at,
          outcome: 'success',
          token: lease.token,
          instance: 'host:1',
          startedAt: expect.any(Number),
          endedAt: expect.any(Number),
        },
      ]);
      // A skipped occurrence finished by a lease that names it: the reason goes.
      const skipped = at + 1_000;
      expect(await sharedStore.claimOccurrence(request(job, skipped, { startingDeadlineMs: 0 }))).toEqual({
        status: 'skipped',
        reason: 'missed',
      });
      await sharedStore.finishOccurrence(
        { ...lease, scheduledAt: skipped },
        { outcome: 'failure', error: 'late' },
      );
      expect((await sharedStore.runHistory(job, { limit: 1 }))[0]).toEqual({
        job,
        scheduledAt: skipped,
        outcome: 'failure',
        instance: 'host:1',
        endedAt: expect.any(Number),
        error: 'late',
      });
    });

    it('rejects malformed input before touching the database', async () => {
      const untouchable = {
        query: () => {
          throw new Error('touched the database');
        },
      };
      const store = new PostgresLockStore(untouchable as never, { createTable: false });
      const lease: OccurrenceLease = {
        job: 'j',
        key: 'j',
        scheduledAt: Date.now(),
        owner: 'o',
        token: 1,
        overlap: 'skip',
      };
      const cases: [() => Promise<unknown>, string][] = [
        [
          () => store.claimOccurrence(request('j', Date.now(), { overlap: 'maybe' as never })),
          'request.overlap',
        ],
        [() => store.claimOccurrence(request('j', Date.now(), { ttlMs: 0 })), 'request.ttlMs'],
        [
          () => store.claimOccurrence(request('j', Date.now(), { startingDeadlineMs: -1 })),
          'request.startingDeadlineMs',
        ],
        [() => store.claimOccurrence(request('j', Number.NaN)), 'request.scheduledAt'],
        [() => store.claimOccurrence(request(42 as never, Date.now())), 'request.job'],
        [() => store.claimOccurrence(request('j', Date.now(), { retentionMs: -1 })), 'request.retentionMs'],
        [() => store.renewOccurrence(lease, 0), 'ttlMs'],
        [() => store.renewOccurrence({ ...lease, token: 1.5 }, 1_000), 'lease.token'],
        [() => store.finishOccurrence(lease, { outcome: 'maybe' as never }), 'result.outcome'],
        [
          () => store.finishOccurrence({ ...lease, overlap: 'never' as never }, { outcome: 'success' }),
          'lease.overlap',
        ],
        [() => store.finishOccurrence(lease, { outcome: 'success' }, { retentionMs: -1 }), 'retentionMs'],
        [() => store.runHistory('j', { limit: -1 }), 'limit'],
        [() => store.runHistory('j', { limit: 1.5 }), 'limit'],
      ];
      for (const [attempt, option] of cases) {
        const error = await attempt().catch((caught: unknown) => caught);
        expect(isInvalidOptionError(error), `${option}: ${String(error)}`).toBe(true);
        expect((error as { option: string }).option).toBe(option);
      }
    });
  });

  describe('failing closed', () => {
    it('an unreachable database fails with StoreUnavailableError, without the password, within the bound', async () => {
      const port = await freePort();
      const password = 's3cret-Pa55word';
      const deadPool = new pg.Pool({
        connectionString: `postgres://resil:${password}@127.0.0.1:${port}/nowhere`,
        connectionTimeoutMillis: 1_000,
      });
      try {
        const store = new PostgresLockStore(deadPool, { timeout: 2_000 });
        const startedAt = performance.now();
        for (const attempt of [
          () => store.acquire('key', 'owner', 1_000),
          () => store.renew('key', 'owner', 1_000),
          () => store.release('key', 'owner'),
          () => store.inspect('key'),
          () => store.now(),
          () => store.claimOccurrence(request('job', 0)),
          () =>
            store.renewOccurrence(
              { job: 'job', key: 'job', scheduledAt: 0, owner: 'owner', token: 1, overlap: 'skip' },
              1_000,
            ),
          () =>
            store.finishOccurrence(
              { job: 'job', key: 'job', scheduledAt: 0, owner: 'owner', token: 1, overlap: 'skip' },
              { outcome: 'success' },
            ),
          () => store.runHistory('job'),
          () => store.lastCompleted('job'),
        ]) {
          const error = await attempt().catch((caught: unknown) => caught);
          expect(isStoreUnavailableError(error)).toBe(true);
          expect(isRejection(error)).toBe(true);
          const everything = `${String(error)} ${(error as Error).stack} ${JSON.stringify(error)} ${inspect(error, { depth: 10 })}`;
          expect(everything).not.toContain(password);
          expect((error as Error).message).toMatch(/ECONNREFUSED/);
        }
        expect(performance.now() - startedAt).toBeLessThan(5_000);
      } finally {
        await deadPool.end();
      }
    });

    it('a pool that never connects is bounded by the store timeout', async () => {
      // A listener that accepts TCP connections and never answers: the startup packet hangs.
      const { createServer } = await import('node:net');
      const sockets = new Set<import('node:net').Socket>();
      const silent = createServer((socket) => {
        sockets.add(socket);
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const port = (silent.address() as { port: number }).port;
      const hangingPool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/x` });
      try {
        const store = new PostgresLockStore(hangingPool, { timeout: 300, createTable: false });
        const startedAt = performance.now();
        const error = await store.acquire('key', 'owner', 1_000).catch((caught: unknown) => caught);
        expect(isStoreUnavailableError(error)).toBe(true);
        expect((error as Error).message).toMatch(/no answer within 300 ms/);
        expect(performance.now() - startedAt).toBeLessThan(2_000);
      } finally {
        for (const socket of sockets) socket.destroy();
        silent.close();
        await hangingPool.end();
      }
    });
  });
});
