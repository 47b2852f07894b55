import { readFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import mysql from 'mysql2/promise';
import {
  type ClaimRequest,
  type ClaimResult,
  isInvalidKeyError,
  isInvalidOptionError,
  isRejection,
  type OccurrenceLease,
} from 'resil';
import {
  isStaleTokenError,
  isStoreSetupError,
  isStoreUnavailableError,
  MysqlLockStore,
  mysqlLockStoreDefaults,
  mysqlLockStoreSql,
} from 'resil/mysql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mysqlTableSuffixes, mysqlUrlForTests, uniqueTableName } from '../../support/mysql.ts';
import { freePort, waitUntil } from '../../support/processes.ts';

const mysqlUrl = await mysqlUrlForTests();
const table = uniqueTableName('store');
const suffixes = mysqlTableSuffixes;

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

async function granted(store: MysqlLockStore, claim: ClaimRequest): Promise<OccurrenceLease> {
  const result = await store.claimOccurrence(claim);
  if (result.status !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
  return result.lease;
}

/** Whole seconds, `ms` ago. */
const past = (ms: number) => Math.floor((Date.now() - ms) / 1_000) * 1_000;

const quote = (name: string) => `\`${name.replaceAll('`', '``')}\``;

describe.skipIf(!mysqlUrl)('MysqlLockStore', () => {
  const pool = mysql.createPool({ uri: mysqlUrl, connectionLimit: 20 });
  const tablesMade: string[] = [table];
  let store: MysqlLockStore;

  /** Runs the statements of `sql` (as mysqlLockStoreSql() returns it) one by one. */
  async function runScript(sql: string): Promise<void> {
    for (const statement of sql.split(';\n').filter((part) => part.trim() !== ''))
      await pool.query(statement);
  }
  async function tablesNamed(base: string): Promise<string[]> {
    const [rows] = await pool.query(
      'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (?) ORDER BY table_name',
      [suffixes.map((suffix) => `${base}${suffix}`)],
    );
    return (rows as Array<{ name: string }>).map((row) => row.name);
  }
  /** A table name this test drops afterwards. */
  function ownTable(label: string): string {
    const name = uniqueTableName(label);
    tablesMade.push(name);
    return name;
  }

  beforeAll(async () => {
    store = new MysqlLockStore(pool, { table });
    await store.ensureTables();
  });

  afterAll(async () => {
    for (const base of tablesMade) {
      for (const suffix of suffixes) await pool.query(`DROP TABLE IF EXISTS ${quote(base + suffix)}`);
    }
    await pool.end();
  });

  it('pins its defaults', () => {
    expect(mysqlLockStoreDefaults).toEqual({
      table: 'resil_locks',
      prefix: '',
      createTable: true,
      timeout: 5_000,
      retentionMs: 7 * 24 * 3_600_000,
      historyLimit: 20,
    });
  });

  describe('tables', () => {
    it('creates its tables on first use, concurrently from many pools, without failing; setting up again keeps the data', async () => {
      const own = ownTable('setup');
      // Separate pools: separate sessions, like separate processes starting at once. Half of them
      // start with a lease, half with a claim.
      const pools = Array.from({ length: 6 }, () => mysql.createPool({ uri: mysqlUrl, connectionLimit: 2 }));
      try {
        const at = past(1_000);
        const tokens = await Promise.all(
          pools.map((each, index) => {
            const racing = new MysqlLockStore(each, { table: own });
            return index % 2 === 0
              ? racing.acquire(`key-${index}`, 'owner', 30_000)
              : granted(racing, request(`job-${index}`, at)).then((lease) => lease.token);
          }),
        );
        expect(tokens.every((token) => Number.isSafeInteger(token))).toBe(true);
        expect(await tablesNamed(own)).toEqual(suffixes.map((suffix) => `${own}${suffix}`).sort());
        const again = new MysqlLockStore(pool, { table: own });
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
      }
    });

    it('with createTable: false creates nothing and fails closed, naming the fix, while the tables are missing', async () => {
      const own = ownTable('nocreate');
      const unready = new MysqlLockStore(pool, { table: own, createTable: false });
      const error = await unready.acquire('key', 'owner', 1_000).catch((caught: unknown) => caught);
      // Not an outage: it lasts until someone creates the tables, as the message says.
      expect(isStoreSetupError(error)).toBe(true);
      expect(isRejection(error)).toBe(true);
      expect((error as Error).message).toMatch(/ER_NO_SUCH_TABLE.*mysqlLockStoreSql\(\)/);
      const claimError = await unready
        .claimOccurrence(request('job', past(1_000)))
        .catch((caught: unknown) => caught);
      expect(isStoreSetupError(claimError)).toBe(true);
      await expect(unready.now()).rejects.toSatisfy(isStoreSetupError);
      expect(await tablesNamed(own)).toEqual([]);
      // The exported SQL is what the store needs, and may run twice.
      await runScript(mysqlLockStoreSql({ table: own }));
      await runScript(mysqlLockStoreSql({ table: own }));
      expect(await unready.now()).toBeGreaterThan(0);
      expect(await unready.acquire('key', 'owner', 1_000)).toBeGreaterThan(0);
      const lease = await granted(unready, request('job', past(1_000)));
      await unready.finishOccurrence(lease, { outcome: 'success' });
      expect(await unready.lastCompleted('job')).toBe(lease.scheduledAt);
    });

    it("prints in docs/mysql.md's set-up section exactly the SQL mysqlLockStoreSql() returns", () => {
      const page = readFileSync(fileURLToPath(new URL('../../../docs/mysql.md', import.meta.url)), 'utf8');
      const intro = 'returns for your options, so you can also run that:\n\n```sql\n';
      const start = page.indexOf(intro);
      expect(start).toBeGreaterThan(0);
      const block = page.slice(start + intro.length, page.indexOf('```\n', start + intro.length));
      expect(block).toBe(mysqlLockStoreSql());
    });

    it('creates dropped tables again (createTable: true) and retries the operation once', async () => {
      const own = ownTable('dropped');
      const dropping = new MysqlLockStore(pool, { table: own });
      const first = await granted(dropping, request('job', past(2_000)));
      await dropping.finishOccurrence(first, { outcome: 'success' });
      for (const dropped of [
        ['', '_occurrences'],
        ['_pauses', '_instances'],
      ]) {
        await pool.query(`DROP TABLE ${dropped.map((suffix) => quote(own + suffix)).join(', ')}`);
        const lease = await granted(dropping, request('job', past(1_000) + Math.floor(Math.random() * 900)));
        await dropping.finishOccurrence(lease, { outcome: 'success' });
        expect(await dropping.acquire(`key-${dropped[0]}`, 'owner', 1_000)).toBeGreaterThan(0);
        expect(await dropping.pauseOf('job', { key: 'job' })).toBeUndefined();
        const info = {
          instance: 'i',
          host: 'h',
          pid: 1,
          version: 'v',
          startedAt: 0,
          jobs: 1,
          clockOffsetMs: 0,
        };
        await dropping.registerInstance(info, { ttlMs: 15_000 });
        expect(await dropping.now()).toBeGreaterThan(0);
      }
    });

    it('a pool without a database is StoreSetupError naming the fix, also from now()', async () => {
      const url = new URL(mysqlUrl!);
      url.pathname = '';
      const noDatabase = mysql.createPool({ uri: url.href, connectionLimit: 2 });
      try {
        const lost = new MysqlLockStore(noDatabase);
        for (const operation of [() => lost.acquire('key', 'owner', 1_000), () => lost.now()]) {
          const error = await operation().catch((caught: unknown) => caught);
          expect(isStoreSetupError(error), String(error)).toBe(true);
          expect((error as Error).message).toMatch(
            /\(ER_NO_DB_ERROR\)\. The pool has no database: give it one/,
          );
        }
      } finally {
        await noDatabase.end();
      }
    });

    it('a dropped table the database user may not create again is StoreSetupError naming the fix, also from now(), until the grant is back', async () => {
      const own = ownTable('noddl');
      const user = `resil_${own.slice(-10)}`;
      const [[database]] = (await pool.query('SELECT DATABASE() AS name')) as unknown as [[{ name: string }]];
      const on = (suffix: string) => `ON ${quote(database.name)}.${quote(own + suffix)}`;
      await pool.query(`CREATE USER '${user}'@'%'`);
      await pool.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${quote(database.name)}.* TO '${user}'@'%'`);
      // CREATE on the store's tables only: table privileges reach open sessions at once.
      for (const suffix of suffixes) await pool.query(`GRANT CREATE ${on(suffix)} TO '${user}'@'%'`);
      const url = new URL(mysqlUrl!);
      url.username = user;
      url.password = '';
      const limited = mysql.createPool({ uri: url.href, connectionLimit: 2 });
      try {
        // The store sets itself up as that user, then loses a table and the right to create it.
        const restricted = new MysqlLockStore(limited, { table: own });
        expect(await restricted.acquire('key', 'owner', 1_000)).toBeGreaterThan(0);
        await pool.query(`DROP TABLE ${quote(own)}`);
        await pool.query(`REVOKE CREATE ${on('')} FROM '${user}'@'%'`);
        const error = await restricted.acquire('key', 'owner', 1_000).catch((caught: unknown) => caught);
        expect(isStoreSetupError(error), String(error)).toBe(true);
        expect((error as Error).message).toMatch(
          /\(ER_TABLEACCESS_DENIED_ERROR\)\. The database user may not set the store up: grant it CREATE/,
        );
        await expect(restricted.now()).rejects.toSatisfy(isStoreSetupError);
        // Given the right back: now() sets the store up again and answers, and so does acquire.
        await pool.query(`GRANT CREATE ${on('')} TO '${user}'@'%'`);
        expect(await restricted.now()).toBeGreaterThan(0);
        expect(await restricted.acquire('key-2', 'owner', 1_000)).toBeGreaterThan(0);
      } finally {
        await limited.end();
        await pool.query(`DROP USER '${user}'@'%'`);
      }
    });

    it('quotes identifiers: a table name with backticks, quotes, spaces and a semicolon is just a name', async () => {
      const odd = `odd \`name\`; '${ownTable('odd').slice(-10)}" --`;
      tablesMade.push(odd);
      const oddStore = new MysqlLockStore(pool, { table: odd });
      expect(await oddStore.acquire('key', 'owner', 30_000)).toBeGreaterThan(0);
      expect(await tablesNamed(odd)).toHaveLength(suffixes.length);
      const lease = await granted(oddStore, request('odd-job', past(1_000)));
      expect(await oddStore.renewOccurrence(lease, 30_000)).toBe(true);
      await oddStore.finishOccurrence(lease, { outcome: 'success' });
      expect(await oddStore.runHistory('odd-job')).toMatchObject([
        { outcome: 'success', token: lease.token },
      ]);
      expect(mysqlLockStoreSql({ table: odd })).toContain(`\`odd \`\`name\`\`; '`);
    });

    it('passes keys, owners, jobs, instances and errors as parameters, never as SQL', async () => {
      // Backslashes too: a driver that escaped them itself would break under NO_BACKSLASH_ESCAPES.
      const key = "k\\'); DELETE FROM resil_locks; -- %_";
      const owner = "o\\' OR '1'='1";
      const token = await store.acquire(key, owner, 30_000);
      expect(await store.inspect(key)).toMatchObject({ owner, token });
      expect(await store.renew(key, "anything' OR 'x'='x", 30_000)).toBe(false);
      expect(await store.renew(key.toUpperCase(), owner, 30_000)).toBe(false);
      const job = "j\\'); DELETE FROM resil_locks_occurrences; --";
      const claim = request(job, past(1_000), {
        key: '`; DROP TABLE resil_locks; `',
        owner: "o'\\",
        instance: "host'; --",
      });
      const lease = await granted(store, claim);
      expect(lease).toMatchObject({ job, key: claim.key, owner: claim.owner });
      await store.finishOccurrence(lease, { outcome: 'failure', error: "e\\'); DROP TABLE x; --" });
      expect(await store.runHistory(job, { key: claim.key })).toMatchObject([
        { job, instance: "host'; --", outcome: 'failure', error: "e\\'); DROP TABLE x; --" },
      ]);
    });

    it('keeps keys byte for byte: case, trailing spaces, NUL and emoji make other keys', async () => {
      const keys = ['Case', 'case', 'case ', 'ca\u0000se', 'case😀'];
      const tokens = await Promise.all(keys.map((key) => store.acquire(key, `owner ${key}`, 30_000)));
      expect(tokens.every((token) => token !== undefined)).toBe(true);
      for (const key of keys) expect(await store.inspect(key)).toMatchObject({ owner: `owner ${key}` });
      const lease = await granted(store, request('job\u0000😀', past(1_000), { key: 'ledger ' }));
      await store.finishOccurrence(lease, { outcome: 'failure', error: 'bad \uD800 text\u0000 😀' });
      expect(await store.runHistory('job\u0000😀', { key: 'ledger' })).toEqual([]);
      expect(await store.runHistory('job\u0000😀', { key: 'ledger ' })).toMatchObject([
        { outcome: 'failure', error: 'bad \uFFFD text\u0000 😀' },
      ]);
    });

    it("keeps a run's error text whole in a database whose default character set is latin1", async () => {
      // MariaDB's own default before 11.6, and many an older database's: text the statements take
      // in their JSON parameter must not pass through it.
      const database = uniqueTableName('latin1');
      await pool.query(`CREATE DATABASE ${quote(database)} DEFAULT CHARACTER SET latin1`);
      const url = new URL(mysqlUrl!);
      url.pathname = `/${database}`;
      const latin1 = mysql.createPool({ uri: url.href, connectionLimit: 2 });
      try {
        const inLatin1 = new MysqlLockStore(latin1, { table });
        const error = 'Ärger 😀 错误 \u2028 end';
        const lease = await granted(inLatin1, request('latin1-job', past(1_000), { instance: 'höst 😀' }));
        await inLatin1.finishOccurrence(lease, { outcome: 'failure', error });
        expect(await inLatin1.runHistory('latin1-job')).toMatchObject([
          { outcome: 'failure', error, instance: 'höst 😀' },
        ]);
      } finally {
        await latin1.end();
        await pool.query(`DROP DATABASE ${quote(database)}`);
      }
    });

    it('refuses a key, job or resource it cannot keep (over 1000 bytes, a lone surrogate) with InvalidKeyError, not as an outage', async () => {
      const long = 'é'.repeat(501);
      const refusals: Array<[string, () => Promise<unknown>, string]> = [
        ['acquire, a long key', () => store.acquire(long, 'o', 30_000), 'key'],
        ['acquire, a lone surrogate', () => store.acquire('a\uD800b', 'o', 30_000), 'key'],
        [
          'claim, a long key',
          () => store.claimOccurrence(request('job', past(1_000), { key: long })),
          'request.key',
        ],
        ['claim, a long job', () => store.claimOccurrence(request(long, past(1_000))), 'request.job'],
        ['runHistory', () => store.runHistory(long), 'job'],
        ['pauseJob', () => store.pauseJob('job', { key: long, by: 'me' }), 'key'],
      ];
      for (const [what, operation, option] of refusals) {
        const error = await operation().then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(isInvalidKeyError(error), `${what}: ${String(error)}`).toBe(true);
        expect(error, what).toMatchObject({ store: 'MysqlLockStore', option });
      }
      expect(() => store.checkKey(long)).toThrow('it is 1002 bytes of UTF-8; the limit is 1000.');
      // 1000 bytes fit, as key and job name of one occurrence, with a prefix on top.
      const atLimit = 'é'.repeat(500);
      const prefixed = new MysqlLockStore(pool, { table, prefix: 'p'.repeat(255) });
      expect(await prefixed.acquire(atLimit, 'o', 30_000)).toBeGreaterThan(0);
      const lease = await granted(prefixed, request(atLimit, past(1_000), { key: `k${'é'.repeat(499)}x` }));
      await prefixed.finishOccurrence(lease, { outcome: 'success' });
    });

    it('rejects bad options, naming the option and the value', () => {
      const cases: [object, string][] = [
        [{ table: '' }, 'table'],
        [{ table: 'x'.repeat(53) }, 'table'],
        [{ table: 'bad\0name' }, 'table'],
        [{ table: 'space ' }, 'table'],
        [{ table: 'emoji😀' }, 'table'],
        [{ prefix: 'p'.repeat(256) }, 'prefix'],
        [{ prefix: 42 }, 'prefix'],
        [{ timeout: '5 parsecs' }, 'timeout'],
        [{ timeout: 0 }, 'timeout'],
        [{ createTable: 'yes' }, 'createTable'],
      ];
      for (const [options, option] of cases) {
        let caught: unknown;
        try {
          new MysqlLockStore(pool, options as never);
        } catch (error) {
          caught = error;
        }
        expect(isInvalidOptionError(caught), option).toBe(true);
        expect((caught as { option: string }).option).toBe(option);
      }
      expect(() => new MysqlLockStore(undefined as never)).toThrow(/pool/);
      // A URL or a pool's config given instead of a pool: the error names them without the password.
      for (const given of [
        'mysql://app:s3cret@db:3306/app',
        { host: 'db', user: 'app', password: 's3cret' },
      ]) {
        let caught: unknown;
        try {
          new MysqlLockStore(given as never);
        } catch (error) {
          caught = error;
        }
        expect(caught).toMatchObject({ code: 'INVALID_OPTION', option: 'pool' });
        expect(`${(caught as Error).message} ${inspect(caught, { depth: 10 })}`).not.toContain('s3cret');
        expect((caught as Error).message).toMatch(/mysql:\/\/app:\[redacted\]@db|"password":"…"/);
      }
      // mysql2's callback pool: the store needs its promise pool.
      expect(() => new MysqlLockStore(pool.pool as never)).toThrow(/mysql2\/promise/);
    });

    it('keeps the leases, ledgers and instances of stores with different prefixes apart on the same tables', async () => {
      const [a, b] = ['app-a:', 'app-b:'].map((prefix) => new MysqlLockStore(pool, { table, prefix }));
      const tokenA = await a!.acquire('shared', 'owner-a', 30_000);
      const tokenB = await b!.acquire('shared', 'owner-b', 30_000);
      expect(tokenA).toBeDefined();
      expect(tokenB).toBeDefined();
      expect(await a!.inspect('shared')).toMatchObject({ owner: 'owner-a' });
      const at = past(1_000);
      const leaseA = await granted(a!, request('prefixed-job', at));
      const leaseB = await granted(b!, request('prefixed-job', at));
      await a!.finishOccurrence(leaseA, { outcome: 'success' });
      expect(await b!.runHistory('prefixed-job')).toMatchObject([
        { outcome: 'running', token: leaseB.token },
      ]);
      const info = { host: 'h', pid: 1, version: 'v', startedAt: 0, jobs: 1, clockOffsetMs: 0 };
      await a!.registerInstance({ ...info, instance: 'worker' }, { ttlMs: 15_000 });
      expect((await a!.listInstances()).map((each) => each.instance)).toEqual(['worker']);
      expect(await b!.listInstances()).toEqual([]);
      const [rows] = await pool.execute(
        `SELECT lock_key FROM ${quote(table)} WHERE lock_key LIKE 'app-%shared'`,
      );
      expect((rows as Array<{ lock_key: Buffer }>).map((row) => row.lock_key.toString()).sort()).toEqual([
        'app-a:shared',
        'app-b:shared',
      ]);
    });
  });

  describe('tokens and leases', () => {
    it('keeps the row and its token on release: the lease is cleared, the token keeps increasing', async () => {
      const first = (await store.acquire('kept', 'a', 30_000))!;
      await store.release('kept', 'a');
      const [rows] = await pool.execute(
        `SELECT owner, token, expires_at_ms FROM ${quote(table)} WHERE lock_key = ?`,
        ['kept'],
      );
      expect(rows).toEqual([{ owner: null, token: first, expires_at_ms: null }]);
      expect(await store.acquire('kept', 'b', 30_000)).toBe(first + 1);
    });

    it("seeds a new key's token from the database clock, so a deleted row never brings tokens back", async () => {
      const first = (await store.acquire('deleted', 'a', 30_000))!;
      expect(Math.abs(first / 1_000 - (await store.now()))).toBeLessThan(5_000);
      await pool.execute(`DELETE FROM ${quote(table)} WHERE lock_key = ?`, ['deleted']);
      expect(await store.acquire('deleted', 'b', 30_000)).toBeGreaterThan(first);
    });

    it('judges expiry by the database clock, in UTC whatever the session time zone', async () => {
      // Every session of this pool runs in a time zone far from UTC.
      const zoned = mysql.createPool({ uri: mysqlUrl, connectionLimit: 2 });
      zoned.pool.on('connection', (connection) => {
        connection.query("SET time_zone = '+09:30'");
      });
      try {
        const local = new MysqlLockStore(zoned, { table });
        expect(Math.abs((await local.now()) - Date.now())).toBeLessThan(2_000);
        await local.acquire('db-clock', 'a', 60_000);
        const lease = (await store.inspect('db-clock'))!;
        expect(lease.expiresAt.getTime() - (await store.now())).toBeGreaterThan(55_000);
        expect(lease.expiresAt.getTime() - (await store.now())).toBeLessThanOrEqual(60_000);
        // Move the stored expiry to just behind the database's clock: the local clock is irrelevant.
        await pool.execute(
          `UPDATE ${quote(table)} SET expires_at_ms = TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6)) DIV 1000 - 1 WHERE lock_key = ?`,
          ['db-clock'],
        );
        expect(await local.inspect('db-clock')).toBeUndefined();
        expect(await local.renew('db-clock', 'a', 60_000)).toBe(false);
        expect(await local.acquire('db-clock', 'b', 60_000)).toBeDefined();
      } finally {
        await zoned.end();
      }
    });
  });

  describe('run ledger', () => {
    const occurrences = quote(`${table}_occurrences`);

    /** Ends the occurrence's lease by the database clock, as if its holder had stopped renewing. */
    async function expire(key: string, job: string, scheduledAt: number): Promise<void> {
      const now = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6)) DIV 1000";
      await pool.execute(
        `UPDATE ${quote(table)} SET expires_at_ms = ${now} - 1 WHERE lock_key = ? AND owner IS NOT NULL`,
        [key],
      );
      await pool.execute(
        `UPDATE ${occurrences} SET expires_at_ms = ${now} - 1 WHERE lock_key = ? AND job = ? AND scheduled_at_ms = ?`,
        [key, job, scheduledAt],
      );
    }

    it('250 concurrent claims are 3 transactions (at most 100 decisions each), and so are their finishes; another instance claiming in the opposite order does not deadlock', async () => {
      let transactions = 0;
      // The pool as the store sees it: every connection taken is a transaction.
      const counting = new Proxy(pool, {
        get(target, property, receiver) {
          if (property === 'getConnection') {
            return () => {
              transactions++;
              return target.getConnection();
            };
          }
          const value = Reflect.get(target, property, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const counted = new MysqlLockStore(counting, { table });
      const jobs = Array.from({ length: 250 }, (_, index) => `batch-${String(999 - index).padStart(4, '0')}`);
      const at = past(2_000);
      const [claims, others] = await Promise.all([
        Promise.all(jobs.map((job) => counted.claimOccurrence(request(job, at)))),
        Promise.all(
          [...jobs].reverse().map((job) => store.claimOccurrence(request(job, at, { instance: 'host:2' }))),
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
          counted.finishOccurrence(
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

    /** The ids of the sessions running the statement that locks lease rows (a lease's or a claim's first). */
    async function lockingSessions(): Promise<number[]> {
      const [rows] = await pool.query(
        "SELECT id FROM information_schema.processlist WHERE command = 'Execute' AND info LIKE ?",
        [`INSERT INTO ${quote(table)} (lock_key%`],
      );
      return (rows as Array<{ id: number }>).map((row) => Number(row.id));
    }

    /** Locks `key`'s lease row in a transaction of its own; resolves with the function that commits it. */
    async function holdRowLock(key: string): Promise<() => Promise<void>> {
      const blocker = await pool.getConnection();
      try {
        await blocker.query('START TRANSACTION');
        await blocker.execute(`SELECT 1 FROM ${quote(table)} WHERE lock_key = ? FOR UPDATE`, [key]);
      } catch (error) {
        blocker.release();
        throw error;
      }
      return async () => {
        try {
          await blocker.query('COMMIT');
        } finally {
          blocker.release();
        }
      };
    }

    /**
     * Holds `key`'s lease row locked, starts `work`, waits until `waiters` sessions wait for that
     * row, then commits: they all go at once, in the order InnoDB gives them the lock. Resolves with
     * what `work` resolves with.
     */
    async function behindRowLock<T>(key: string, waiters: number, work: () => Promise<T>): Promise<T> {
      const unlock = await holdRowLock(key);
      let running: Promise<T>;
      try {
        running = work();
        running.catch(() => {});
        await waitUntil(
          `${waiters} sessions waiting for the row of ${key}`,
          async () => (await lockingSessions()).length >= waiters,
        );
      } finally {
        await unlock();
      }
      return running;
    }

    /**
     * Resolves once none of `sessions` runs a statement or has a transaction open (or is still
     * connected). Polled every 200 ms: InnoDB refreshes its innodb_trx cache only when it was not
     * read for 100 ms.
     */
    async function settled(sessions: number[]): Promise<void> {
      const busy = async () => {
        const [rows] = await pool.query(
          `SELECT id FROM information_schema.processlist WHERE id IN (?) AND command <> 'Sleep'
           UNION ALL SELECT trx_mysql_thread_id FROM information_schema.innodb_trx WHERE trx_mysql_thread_id IN (?)`,
          [sessions, sessions],
        );
        return (rows as unknown[]).length;
      };
      await waitUntil('the sessions to end their transactions', async () => (await busy()) === 0, {
        intervalMs: 200,
      });
    }

    /** `count` stores on the shared tables, each on a pool of one connection (separate sessions, like separate processes). */
    async function separateStores(count: number, use: (stores: MysqlLockStore[]) => Promise<void>) {
      const pools = Array.from({ length: count }, () =>
        mysql.createPool({ uri: mysqlUrl, connectionLimit: 1 }),
      );
      try {
        const stores = pools.map((each) => new MysqlLockStore(each, { table }));
        await Promise.all(stores.map((each) => each.now()));
        await use(stores);
      } finally {
        await Promise.all(pools.map((each) => each.end()));
      }
    }

    const grantsOf = (results: ClaimResult[]) =>
      results.flatMap((result) => (result.status === 'granted' ? [result.lease] : []));

    it('grants exactly one of 20 concurrent claims of one occurrence from separate pools, also when all wait for the row lock', async () => {
      const job = 'race-job';
      const at = past(3_000);
      await separateStores(20, async (stores) => {
        const race = (scheduledAt: number) =>
          Promise.all(
            stores.map((each, index) =>
              each.claimOccurrence(request(job, scheduledAt, { instance: `host:${index}` })),
            ),
          );

        // A key no claim has seen yet: they race to create its row.
        const first = await race(at);
        const [lease] = grantsOf(first);
        expect(grantsOf(first)).toHaveLength(1);
        expect(first.filter((result) => result.status === 'wait' && result.runningElsewhere)).toHaveLength(
          19,
        );
        await store.finishOccurrence(lease!, { outcome: 'success' });

        // All 20 wait for the key's row lock, then go at once.
        const second = await behindRowLock(job, 20, () => race(at + 1_000));
        const [next] = grantsOf(second);
        expect(grantsOf(second)).toHaveLength(1);
        // No other claim took a token.
        expect(next!.token).toBe(lease!.token + 1);
        expect(await store.claimOccurrence(request(job, at))).toEqual({
          status: 'skipped',
          reason: 'already-done',
        });
      });
    });

    it('grants one takeover of an abandoned occurrence to 20 claims that waited for its row lock: each claim decides on what the one before it committed', async () => {
      // allow-all takes no lease on the key: only the occurrence's own row says it was taken over,
      // so a claim that read it from a snapshot older than the winner's commit would take it too.
      const job = 'takeover-race-job';
      const at = past(3_000);
      const abandoned = await granted(store, request(job, at, { overlap: 'allow-all' }));
      await expire(job, job, at);
      await separateStores(20, async (stores) => {
        const claims = await behindRowLock(job, 20, () =>
          Promise.all(
            stores.map((each, index) =>
              each.claimOccurrence(request(job, at, { overlap: 'allow-all', instance: `host:${index}` })),
            ),
          ),
        );
        const grants = grantsOf(claims);
        expect(grants).toHaveLength(1);
        expect(claims.filter((claim) => claim.status === 'granted' && claim.takeover)).toHaveLength(1);
        expect(claims.filter((claim) => claim.status === 'wait' && claim.runningElsewhere)).toHaveLength(19);
        expect(grants[0]!.token).toBe(abandoned.token + 1);
        expect(await store.runHistory(job)).toMatchObject([
          { scheduledAt: at, outcome: 'running', token: grants[0]!.token, takeovers: 1 },
        ]);
      });
    });

    it('a batch that outlives the timeout waiting for a row lock fails with StoreUnavailableError, and commits nothing once the row is free', async () => {
      const job = 'late-job';
      const at = past(2_000);
      // A pool of its own: the test's reads below must not run on the claim's session.
      const own = mysql.createPool({ uri: mysqlUrl, connectionLimit: 2 });
      const impatient = new MysqlLockStore(own, { table, timeout: 300 });
      const unlock = await holdRowLock(job);
      let sessions: number[] = [];
      let error: unknown;
      try {
        const claim = impatient.claimOccurrence(request(job, at)).catch((caught: unknown) => caught);
        await waitUntil('the claim to wait for the row', async () => {
          sessions = await lockingSessions();
          return sessions.length > 0;
        });
        error = await claim;
      } finally {
        await unlock();
      }
      try {
        expect(isStoreUnavailableError(error)).toBe(true);
        expect((error as Error).message).toMatch(/no answer within 300 ms/);
        // The row is free: the claim's transaction gets it now, and must end without committing.
        await settled(sessions);
        expect(await store.runHistory(job)).toEqual([]);
        expect(await store.inspect(job)).toBeUndefined();
        expect(await impatient.claimOccurrence(request(job, at))).toMatchObject({
          status: 'granted',
          takeover: false,
        });
      } finally {
        await own.end();
      }
    });

    it('a batch that waits for a row lock past innodb_lock_wait_timeout is run again while its bound lasts: a busy store is not a down one', async () => {
      const short = mysql.createPool({ uri: mysqlUrl, connectionLimit: 2 });
      short.pool.on('connection', (connection) => {
        connection.query('SET SESSION innodb_lock_wait_timeout = 1');
      });
      try {
        const patient = new MysqlLockStore(short, { table, timeout: 10_000 });
        const job = 'contended-job';
        const at = past(2_000);
        await patient.now();
        const unlock = await holdRowLock(job);
        let claim: Promise<ClaimResult>;
        try {
          claim = patient.claimOccurrence(request(job, at));
          claim.catch(() => {});
          // Held past the first attempt's wait of 1 s, which fails with ER_LOCK_WAIT_TIMEOUT.
          await new Promise((resolve) => setTimeout(resolve, 1_500));
        } finally {
          await unlock();
        }
        expect(await claim).toMatchObject({ status: 'granted', lease: { scheduledAt: at } });
      } finally {
        await short.end();
      }
    });

    for (const kill of ['CONNECTION', 'QUERY'] as const) {
      it(`a batch whose ${kill === 'CONNECTION' ? 'connection is killed' : 'statement is interrupted'} mid-transaction fails with StoreUnavailableError, writes nothing, and the next batch works${kill === 'CONNECTION' ? ' on a new connection' : ''}`, async () => {
        const job = `killed-${kill}-job`;
        const at = past(2_000);
        // One connection: the next claim needs the pool to have dropped (or kept) it rightly.
        const single = mysql.createPool({ uri: mysqlUrl, connectionLimit: 1 });
        try {
          const victim = new MysqlLockStore(single, { table });
          await victim.now();
          const unlock = await holdRowLock(job);
          let error: unknown;
          try {
            const claim = victim.claimOccurrence(request(job, at)).catch((caught: unknown) => caught);
            let sessions: number[] = [];
            await waitUntil('the claim to wait for the row', async () => {
              sessions = await lockingSessions();
              return sessions.length > 0;
            });
            await pool.query(`KILL ${kill} ${sessions[0]}`);
            error = await claim;
          } finally {
            await unlock();
          }
          expect(isStoreUnavailableError(error)).toBe(true);
          expect((error as Error).message).toMatch(
            kill === 'CONNECTION' ? /PROTOCOL_CONNECTION_LOST/ : /ER_QUERY_INTERRUPTED/,
          );
          expect(await store.runHistory(job)).toEqual([]);
          expect(await victim.claimOccurrence(request(job, at))).toMatchObject({ status: 'granted' });
        } finally {
          await single.end();
        }
      });
    }

    it('fences a finish by an earlier holder: StaleTokenError with the highest token, the record untouched, its own lease released', async () => {
      const job = 'stale-job';
      const at = past(2_000);
      const first = await granted(store, request(job, at));
      await expire(job, job, at);
      const takeover = await store.claimOccurrence(request(job, at, { instance: 'host:2' }));
      expect(takeover).toMatchObject({ status: 'granted', takeover: true, lease: { scheduledAt: at } });
      const second = (takeover as { lease: OccurrenceLease }).lease;
      expect(second.token).toBe(first.token + 1);
      expect(await store.renewOccurrence(first, 30_000)).toBe(false);
      const before = await store.runHistory(job);
      const error = await store
        .finishOccurrence(first, { outcome: 'success' })
        .catch((caught: unknown) => caught);
      expect(isStaleTokenError(error)).toBe(true);
      expect(error).toMatchObject({
        code: 'STALE_TOKEN',
        resource: job,
        token: first.token,
        highestToken: second.token,
      });
      expect(await store.runHistory(job)).toEqual(before);
      expect(await store.inspect(job)).toMatchObject({ owner: second.owner, token: second.token });
      const forged = await store
        .finishOccurrence({ ...second, token: second.token - 1 }, { outcome: 'success' })
        .catch((caught: unknown) => caught);
      expect(forged).toMatchObject({ code: 'STALE_TOKEN', highestToken: second.token });
      expect(await store.inspect(job)).toBeUndefined();
      expect(await store.runHistory(job)).toEqual(before);
      expect(await store.lastCompleted(job)).toBeUndefined();
    });

    it('round-trips epoch milliseconds exactly and returns only the public fields, numbers as numbers', async () => {
      const job = 'exact-job';
      const scheduledAt = past(5_000) + 123;
      const lease = await granted(store, request(job, scheduledAt, { instance: 'host:7' }));
      expect(lease).toEqual({
        job,
        key: job,
        scheduledAt,
        owner: expect.any(String),
        token: expect.any(Number),
        overlap: 'skip',
      });
      await store.finishOccurrence(lease, { outcome: 'failure', error: 'boom' });
      const [record] = await store.runHistory(job);
      expect(record).toEqual({
        job,
        scheduledAt,
        outcome: 'failure',
        token: lease.token,
        instance: 'host:7',
        startedAt: expect.any(Number),
        endedAt: expect.any(Number),
        error: 'boom',
      });
      expect(Number.isInteger(record!.startedAt)).toBe(true);
      expect(record!.endedAt!).toBeGreaterThanOrEqual(record!.startedAt!);
      expect(Math.abs(record!.endedAt! - (await store.now()))).toBeLessThan(5_000);
      expect(await store.claimOccurrence(request(job, scheduledAt + 1, { startingDeadlineMs: 0 }))).toEqual({
        status: 'skipped',
        reason: 'missed',
      });
      expect((await store.runHistory(job, { limit: 1 }))[0]).toEqual({
        job,
        scheduledAt: scheduledAt + 1,
        outcome: 'skipped',
        reason: 'missed',
        instance: 'host:1',
        endedAt: expect.any(Number),
      });
      const success = await granted(store, request(job, scheduledAt + 2));
      await store.finishOccurrence(success, { outcome: 'success' });
      expect(await store.lastCompleted(job)).toBe(scheduledAt + 2);
    });

    it('trims on finish: occurrences older than the retention (not running ones), then past the record limit, also among 10,000', async () => {
      const job = 'trim-job';
      const now = await store.now();
      const day = 86_400_000;
      const insert = `INSERT INTO ${occurrences} (lock_key, job, scheduled_at_ms, state, reason, token, owner, instance, started_at_ms, expires_at_ms, ended_at_ms)
        SELECT ?, ?, at_ms, state, reason, token, owner, 'host:1', started_ms, expires_ms, ended_ms FROM JSON_TABLE(?, '$[*]' COLUMNS (
          at_ms BIGINT PATH '$[0]', state VARCHAR(8) PATH '$[1]', reason VARCHAR(8) PATH '$[2]', token BIGINT PATH '$[3]',
          owner VARCHAR(20) PATH '$[4]', started_ms BIGINT PATH '$[5]', expires_ms BIGINT PATH '$[6]', ended_ms BIGINT PATH '$[7]')) AS rows_in`;
      const rows = (list: unknown[][]) => [job, job, JSON.stringify(list)];
      await pool.execute(
        insert,
        rows([
          [now - 9 * day, 'running', null, 1, 'old-owner', now, now + 3_600_000, null],
          [now - 8 * day, 'success', null, null, null, null, null, now],
          [now - 6 * day, 'success', null, null, null, null, null, now],
        ]),
      );
      const first = await granted(store, request(job, past(50_000)));
      await store.finishOccurrence(first, { outcome: 'success' });
      expect((await store.runHistory(job)).map((record) => record.outcome)).toEqual([
        'success',
        'success',
        'running',
      ]);
      const second = await granted(store, request(job, past(30_000)));
      await store.finishOccurrence(second, { outcome: 'success' }, { retentionMs: 3_600_000 });
      expect((await store.runHistory(job)).map((record) => record.scheduledAt)).toEqual([
        second.scheduledAt,
        first.scheduledAt,
        now - 9 * day,
      ]);
      // Past the record limit (100 by default), the oldest go, but not a running one nor one
      // younger than keepWithinMs (1 min by default).
      const many = Array.from({ length: 10_000 }, (_, index) => [
        now - 120_000 - (index + 1) * 1_000,
        'skipped',
        'overlap',
        null,
        null,
        null,
        null,
        now,
      ]);
      await pool.execute(insert, rows(many));
      const third = await granted(store, request(job, past(10_000)));
      await store.finishOccurrence(third, { outcome: 'success' });
      const [kept] = await pool.execute(
        `SELECT COUNT(*) AS n, SUM(state = 'running') AS running FROM ${occurrences} WHERE lock_key = ? AND job = ?`,
        [job, job],
      );
      expect(
        (kept as Array<{ n: number; running: string }>).map((row) => [Number(row.n), Number(row.running)]),
      ).toEqual([[101, 1]]);
      expect((await store.runHistory(job, { limit: 3 })).map((record) => record.scheduledAt)).toEqual([
        third.scheduledAt,
        second.scheduledAt,
        first.scheduledAt,
      ]);
    });

    it('rejects malformed input before touching the database', async () => {
      const touched = () => {
        throw new Error('touched the database');
      };
      const untouchable = { getConnection: touched, execute: touched, query: touched };
      const unready = new MysqlLockStore(untouchable as never, { createTable: false });
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
          () => unready.claimOccurrence(request('j', Date.now(), { overlap: 'maybe' as never })),
          'request.overlap',
        ],
        [() => unready.claimOccurrence(request('j', Date.now(), { ttlMs: 0 })), 'request.ttlMs'],
        [() => unready.claimOccurrence(request('j', Number.NaN)), 'request.scheduledAt'],
        [() => unready.claimOccurrence(request('j', 1.5)), 'request.scheduledAt'],
        [
          () => unready.finishOccurrence({ ...lease, scheduledAt: 0.5 }, { outcome: 'success' }),
          'lease.scheduledAt',
        ],
        [() => unready.claimOccurrence(request(42 as never, Date.now())), 'request.job'],
        [() => unready.renewOccurrence(lease, 0), 'ttlMs'],
        [() => unready.renewOccurrence({ ...lease, token: 1.5 }, 1_000), 'lease.token'],
        [() => unready.finishOccurrence(lease, { outcome: 'maybe' as never }), 'result.outcome'],
        [() => unready.finishOccurrence(lease, { outcome: 'success' }, { retentionMs: -1 }), 'retentionMs'],
        [() => unready.runHistory('j', { limit: 1.5 }), 'limit'],
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
      const deadPool = mysql.createPool({
        uri: `mysql://resil:${password}@127.0.0.1:${port}/nowhere`,
        connectTimeout: 1_000,
      });
      try {
        const dead = new MysqlLockStore(deadPool, { timeout: 2_000 });
        const lease: OccurrenceLease = {
          job: 'job',
          key: 'job',
          scheduledAt: 0,
          owner: 'owner',
          token: 1,
          overlap: 'skip',
        };
        const startedAt = performance.now();
        for (const attempt of [
          () => dead.acquire('key', 'owner', 1_000),
          () => dead.inspect('key'),
          () => dead.now(),
          () => dead.claimOccurrence(request('job', 0)),
          () => dead.finishOccurrence(lease, { outcome: 'success' }),
          () => dead.runHistory('job'),
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

    // What each operation leaves behind when it runs: a lease nobody holds would block the key
    // for its ttl, a claim an occurrence marked running by an owner nobody has.
    const lateOperations: Array<
      [string, (store: MysqlLockStore) => Promise<unknown>, () => Promise<unknown>]
    > = [
      [
        'a lease',
        (late) => late.acquire('pool-late-key', 'late', 60_000),
        () => store.inspect('pool-late-key'),
      ],
      [
        'a claim (a run ledger batch)',
        (late) => late.claimOccurrence(request('pool-late-job', past(2_000))),
        async () => (await store.runHistory('pool-late-job'))[0],
      ],
    ];
    for (const [what, operation, leftBehind] of lateOperations) {
      it(`${what} that waited for a pooled connection past the timeout fails with StoreUnavailableError, and is not sent once one is free`, async () => {
        const single = mysql.createPool({ uri: mysqlUrl, connectionLimit: 1 });
        try {
          const impatient = new MysqlLockStore(single, { table, timeout: 300 });
          await impatient.now();
          const busy = await single.getConnection();
          let error: unknown;
          try {
            error = await operation(impatient).catch((caught: unknown) => caught);
          } finally {
            busy.release();
          }
          expect(isStoreUnavailableError(error)).toBe(true);
          expect((error as Error).message).toMatch(/no answer within 300 ms/);
          // The pool hands out its one connection in turn: the operation had its turn before this read.
          expect(await impatient.now()).toBeGreaterThan(0);
          expect(await leftBehind()).toBeUndefined();
          await expect(operation(impatient)).resolves.toBeTruthy();
          expect(await leftBehind()).toBeDefined();
        } finally {
          await single.end();
        }
      });
    }

    it('a server that accepts connections and never answers is bounded by the store timeout', async () => {
      const sockets = new Set<Socket>();
      const silent = createServer((socket) => {
        sockets.add(socket);
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const port = (silent.address() as { port: number }).port;
      const hangingPool = mysql.createPool({
        uri: `mysql://root@127.0.0.1:${port}/x`,
        connectTimeout: 10_000,
      });
      try {
        const hanging = new MysqlLockStore(hangingPool, { timeout: 300, createTable: false });
        const startedAt = performance.now();
        const error = await hanging.acquire('key', 'owner', 1_000).catch((caught: unknown) => caught);
        expect(isStoreUnavailableError(error)).toBe(true);
        expect((error as Error).message).toMatch(/no answer within 300 ms/);
        expect(performance.now() - startedAt).toBeLessThan(2_000);
      } finally {
        for (const socket of sockets) socket.destroy();
        silent.close();
        await hangingPool.end().catch(() => {});
      }
    });
  });
});
