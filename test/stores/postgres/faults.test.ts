import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  isStoreUnavailableError,
  PostgresLockStore,
  StoreUnavailableError,
  withFencedTransaction,
} from 'resil/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveTables } from '../../../src/stores/postgres/schema.ts';
import {
  databaseUrlForTests,
  type PostgresServer,
  postgresServerAvailable,
  startPostgresServer,
  uniqueSchemaName,
  waiterLockBackends,
} from '../../support/postgres.ts';
import { type SpawnedProcess, spawnProcess, waitUntil } from '../../support/processes.ts';
import { heldUntilReleased, lockOn } from '../../support/release-wake-ups.ts';

const databaseUrl = await databaseUrlForTests();
const schema = uniqueSchemaName('faults');
const holderScript = fileURLToPath(new URL('./fixtures/holder.ts', import.meta.url));
const ttlMs = 1_500;

/** Starts a holder process; resolves once it holds `key`, with its token. */
async function startHolder(
  key: string,
  resource: string,
  writeEveryMs: number,
  workMs = 0,
): Promise<{ holder: SpawnedProcess; token: number }> {
  const holder = spawnProcess(process.execPath, ['--import', 'tsx', holderScript], {
    name: 'lock holder',
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      SCHEMA: schema,
      KEY: key,
      TTL_MS: String(ttlMs),
      RESOURCE: resource,
      WRITE_EVERY_MS: String(writeEveryMs),
      WORK_MS: String(workMs),
    },
  });
  const line = await holder.waitForOutput(/^acquired \d+/, 15_000);
  return { holder, token: Number(line.split(' ')[1]) };
}

function count(output: string, pattern: RegExp): number {
  return output.split('\n').filter((line) => pattern.test(line)).length;
}

describe.skipIf(!databaseUrl)('PostgresLockStore under faults, with real processes', () => {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 5, connectionTimeoutMillis: 5_000 });
  const store = new PostgresLockStore(pool, { schema });
  const holders: SpawnedProcess[] = [];

  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA ${schema}`);
    await store.ensureTables();
    await pool.query(`CREATE TABLE ${schema}.reports (id serial PRIMARY KEY, resource text, body text)`);
  });

  afterAll(async () => {
    await Promise.all(holders.map((holder) => holder.stop(1_000)));
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  /**
   * Waits for the paused holder's lease on `key` to expire, takes it as `successor`, and writes
   * 'successor' to `resource` fenced by the new token. Resolves to that token.
   */
  async function successorWrites(key: string, resource: string): Promise<number> {
    const taken = (await waitUntil(
      'the paused holder’s lease to expire',
      () => store.acquire(key, 'successor', 30_000),
      { timeoutMs: ttlMs + 2_000, intervalMs: 20 },
    )) as number;
    await withFencedTransaction(
      pool,
      resource,
      taken,
      (client) =>
        client.query(`INSERT INTO ${schema}.reports (resource, body) VALUES ($1, 'successor')`, [resource]),
      { schema },
    );
    return taken;
  }

  /** The bodies written to `resource`, oldest first. */
  async function bodiesOf(resource: string): Promise<string[]> {
    const rows = await pool.query<{ body: string }>(
      `SELECT body FROM ${schema}.reports WHERE resource = $1 ORDER BY id`,
      [resource],
    );
    return rows.rows.map((row) => row.body);
  }

  it('kill -9 of a holder: its lease is not released, and another owner acquires within one ttl with a higher token', async () => {
    const { holder, token } = await startHolder('crash', 'unused', 0);
    holders.push(holder);
    await holder.waitForOutput(/^renewed/, 5_000);
    expect(await store.acquire('crash', 'survivor', ttlMs)).toBeUndefined();

    const killedAt = performance.now();
    holder.kill('SIGKILL');
    await holder.exited;
    expect((await store.inspect('crash'))?.token).toBe(token);

    const taken = await waitUntil(
      'the crashed holder’s lease to expire',
      () => store.acquire('crash', 'survivor', ttlMs),
      { timeoutMs: ttlMs + 2_000, intervalMs: 20 },
    );
    const waited = performance.now() - killedAt;
    expect(taken).toBeGreaterThan(token);
    // The last renewal came at most ttl / 3 before the kill: the lease outlives the holder by
    // between 2/3 ttl and one ttl.
    expect(waited).toBeLessThan(ttlMs + 500);
    expect(waited).toBeGreaterThan(ttlMs / 2);
  });

  it('SIGSTOP of a holder past its ttl: another owner takes over, and the woken holder’s fenced writes are all rejected', async () => {
    const resource = 'paused-report';
    const { holder, token } = await startHolder('pause', resource, 50);
    holders.push(holder);
    await holder.waitForOutput(/^write ok 2$/, 5_000);

    holder.kill('SIGSTOP');
    const taken = await successorWrites('pause', resource);
    expect(taken).toBeGreaterThan(token);

    holder.kill('SIGCONT');
    await holder.waitForOutput(/^lost$/, 5_000);
    await waitUntil(
      'three rejected writes from the woken holder',
      () => count(holder.output(), /^write stale/) >= 3,
    );
    holder.kill('SIGKILL');
    await holder.exited;

    const output = holder.output();
    // Each rejection names the successor's token as the highest seen.
    const stale = output.split('\n').filter((line) => line.startsWith('write stale'));
    expect(stale.every((line) => line.endsWith(` ${taken}`))).toBe(true);
    // A write the pause caught inside its transaction is ended by the server (an error, rolled
    // back); every later one is stale. So nothing the holder wrote landed after the successor.
    const bodies = await bodiesOf(resource);
    expect(bodies.at(-1)).toBe('successor');
    expect(bodies).toHaveLength(count(output, /^write ok/) + 1);
    expect(count(output, /^write error/)).toBeLessThanOrEqual(1);
  });

  it('SIGSTOP of a holder inside its fenced transaction: the server ends that session, the successor writes, the holder’s write is rolled back', async () => {
    const resource = 'paused-mid-transaction';
    const { holder } = await startHolder('pause-mid', resource, 50, 400);
    holders.push(holder);
    await holder.waitForOutput(/^in transaction 1$/, 5_000);
    holder.kill('SIGSTOP');

    // The holder's open transaction locks the fence row until the server ends its idle session.
    await successorWrites('pause-mid', resource);

    holder.kill('SIGCONT');
    await holder.waitForOutput(/^write error 1 /, 5_000);
    await waitUntil(
      'two rejected writes from the woken holder',
      () => count(holder.output(), /^write stale/) >= 2,
    );
    holder.kill('SIGKILL');
    await holder.exited;

    expect(count(holder.output(), /^write ok/)).toBe(0);
    expect(await bodiesOf(resource)).toEqual(['successor']);
  });

  describe.skipIf(!postgresServerAvailable())('a private server that stalls and dies', () => {
    let server: PostgresServer;
    let serverPool: pg.Pool;

    beforeAll(async () => {
      server = await startPostgresServer();
      serverPool = new pg.Pool({ connectionString: server.url, max: 4, connectionTimeoutMillis: 1_000 });
    });

    afterAll(async () => {
      await server?.stop();
      await serverPool?.end();
    });

    it('a stalled server (SIGSTOP): acquire fails closed with StoreUnavailableError within the timeout, and works again once it resumes', async () => {
      const stalledStore = new PostgresLockStore(serverPool, { timeout: 500 });
      expect(await stalledStore.acquire('before', 'a', 10_000)).toBeDefined();

      server.kill('SIGSTOP');
      const startedAt = performance.now();
      const error = await stalledStore.acquire('during', 'a', 10_000).catch((caught: unknown) => caught);
      const waited = performance.now() - startedAt;
      server.kill('SIGCONT');

      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(waited).toBeGreaterThanOrEqual(450);
      expect(waited).toBeLessThan(1_500);
      const token = await waitUntil('the resumed server to grant a lease', () =>
        stalledStore.acquire('after', 'a', 10_000),
      );
      expect(token).toBeGreaterThan(0);
    });

    it('a stopped server: every acquire fails closed with StoreUnavailableError, quickly, and the process survives the pool’s errors', async () => {
      const deadStore = new PostgresLockStore(serverPool, { timeout: 2_000 });
      expect(await deadStore.acquire('k', 'a', 10_000)).toBeDefined();
      await server.stop();
      for (let attempt = 0; attempt < 3; attempt++) {
        const startedAt = performance.now();
        const error = await deadStore.acquire('k', 'b', 10_000).catch((caught: unknown) => caught);
        expect(isStoreUnavailableError(error)).toBe(true);
        expect(performance.now() - startedAt).toBeLessThan(1_500);
      }
    });
  });
});

describe.skipIf(!databaseUrl)('PostgresLockStore wake-ups when the listening backend is terminated', () => {
  const wakeSchema = uniqueSchemaName('wake-faults');
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 5, connectionTimeoutMillis: 5_000 });
  const { waiterLockClass } = resolveTables({ schema: wakeSchema });

  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA ${wakeSchema}`);
    await new PostgresLockStore(pool, { schema: wakeSchema }).ensureTables();
  });
  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${wakeSchema} CASCADE`);
    await pool.end();
  });

  /** The backends holding this schema's waiter locks: the store's listening client, while someone waits. */
  const listeningBackends = () => waiterLockBackends(pool, waiterLockClass);

  it('pg_terminate_backend of the listening backend: the release notification is lost, the waiter still acquires by polling, and the store listens again', async () => {
    const store = new PostgresLockStore(pool, { schema: wakeSchema });
    const lock = lockOn(store, 'job', '20s');
    const holder = heldUntilReleased();
    const holding = lock.execute(holder.hold);
    await waitUntil('the holder to hold', async () => (await store.inspect('job')) !== undefined);
    const waiting = lock.execute(() => performance.now());
    const [listener] = (await waitUntil('the waiter to listen', async () => {
      const pids = await listeningBackends();
      return pids.length === 1 ? pids : undefined;
    })) as number[];
    await pool.query('SELECT pg_terminate_backend($1)', [listener]);
    await waitUntil('the backend to be gone', async () => (await listeningBackends()).length === 0);
    // Released within the store's 1 s before it listens again: nobody hears this NOTIFY.
    const releasedAt = performance.now();
    holder.release();
    await holding;
    const ranAt = await waiting;
    expect(ranAt - releasedAt).toBeLessThan(1_000 + 400);
    // The next waiter listens again, on a new backend, and is woken through it.
    const holderAgain = heldUntilReleased();
    const holdingAgain = lock.execute(holderAgain.hold);
    await waitUntil('the holder to hold again', async () => (await store.inspect('job')) !== undefined);
    const waitingAgain = lock.execute(() => 'woken');
    const [again] = (await waitUntil('the next waiter to listen', async () => {
      const pids = await listeningBackends();
      return pids.length === 1 ? pids : undefined;
    })) as number[];
    expect(again).not.toBe(listener);
    holderAgain.release();
    await holdingAgain;
    expect(await waitingAgain).toBe('woken');
    await store.close();
  });
});
