/**
 * MysqlLockStore against a private MariaDB that stalls, restarts and crashes: started by the test
 * on a free loopback port, signalled by its pid only.
 */
import mysql from 'mysql2/promise';
import { isStoreUnavailableError, MysqlLockStore } from 'resil/mysql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MysqlServer, mysqlServerAvailable, startMysqlServer } from '../../support/mysql.ts';
import { waitUntil } from '../../support/processes.ts';
import { skipOrFail } from '../../support/services.ts';

const available = mysqlServerAvailable();
if (!available) skipOrFail('MySQL fault tests skipped: mariadbd is not on PATH nor in /usr/sbin.');

describe.skipIf(!available)('MysqlLockStore on a MariaDB that stalls, restarts and crashes', () => {
  let server: MysqlServer;
  let pool: mysql.Pool;

  beforeAll(async () => {
    server = await startMysqlServer();
    pool = mysql.createPool({ uri: server.url, connectionLimit: 4, connectTimeout: 1_000 });
  });
  afterAll(async () => {
    await pool?.end().catch(() => {});
    await server?.stop();
  });

  /** Stops the server (SIGTERM, or a crash with SIGKILL) and starts it again on its data and port. */
  async function restart(crash: boolean): Promise<void> {
    if (crash) {
      server.kill('SIGKILL');
      await server.process.exited;
    } else {
      await server.stop({ keepData: true });
    }
    server = await startMysqlServer({ port: server.port, dataDirectory: server.dataDirectory });
  }

  it('a stalled server (SIGSTOP): acquire fails closed with StoreUnavailableError within the timeout, and works again once it resumes', async () => {
    const store = new MysqlLockStore(pool, { timeout: 500 });
    expect(await store.acquire('before', 'a', 10_000)).toBeDefined();
    server.kill('SIGSTOP');
    const startedAt = performance.now();
    const error = await store.acquire('during', 'a', 10_000).catch((caught: unknown) => caught);
    const waited = performance.now() - startedAt;
    server.kill('SIGCONT');
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(waited).toBeGreaterThanOrEqual(450);
    expect(waited).toBeLessThan(1_500);
    expect(
      await waitUntil('the resumed server to grant a lease', () => store.acquire('after', 'a', 10_000)),
    ).toBeGreaterThan(0);
  });

  for (const crash of [false, true]) {
    it(`${crash ? 'a crash (SIGKILL)' : 'a restart'} of the server keeps every committed lease, record and token: operations fail closed meanwhile, and tokens go on increasing after it`, async () => {
      const store = new MysqlLockStore(pool, { timeout: 1_000 });
      const key = `restart-${crash}`;
      const token = (await store.acquire(key, 'holder', 60_000))!;
      const at = Math.floor(Date.now() / 1_000) * 1_000 - 1_000;
      const claim = await store.claimOccurrence({
        job: key,
        key: `${key}-job`,
        scheduledAt: at,
        owner: 'runner',
        instance: 'host:1',
        ttlMs: 60_000,
        overlap: 'skip',
        startingDeadlineMs: 60_000,
      });
      expect(claim.status).toBe('granted');

      await restart(crash);
      // While the pool's old connections fail and new ones are made, an operation may fail: closed.
      await waitUntil(
        'the restarted server to answer',
        () =>
          store.now().then(
            () => true,
            () => false,
          ),
        {
          timeoutMs: 10_000,
        },
      );
      expect(await store.inspect(key)).toMatchObject({ owner: 'holder', token });
      expect(await store.acquire(key, 'someone-else', 60_000)).toBeUndefined();
      expect(await store.runHistory(key, { key: `${key}-job` })).toMatchObject([
        { outcome: 'running', scheduledAt: at },
      ]);
      await store.release(key, 'holder');
      expect(await store.acquire(key, 'next', 60_000)).toBe(token + 1);
    });
  }

  it('a stopped server: every operation fails closed with StoreUnavailableError, quickly, and the process survives the pool’s errors', async () => {
    const store = new MysqlLockStore(pool, { timeout: 2_000 });
    expect(await store.acquire('stopped', 'a', 10_000)).toBeDefined();
    await server.stop({ keepData: true });
    for (const operation of [
      () => store.acquire('stopped', 'b', 10_000),
      () => store.now(),
      () => store.runHistory('job'),
    ]) {
      const startedAt = performance.now();
      const error = await operation().catch((caught: unknown) => caught);
      expect(isStoreUnavailableError(error)).toBe(true);
      expect(performance.now() - startedAt).toBeLessThan(1_500);
    }
    server = await startMysqlServer({ port: server.port, dataDirectory: server.dataDirectory });
  });
});
