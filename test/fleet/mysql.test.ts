/**
 * The fleet scenario of the Redis and PostgreSQL fleet tests on MySQL: three `resil run`
 * processes (one 2 s fast) on a `MysqlLockStore` on a private MariaDB, an every-second job, its
 * holder frozen past its ttl, another holder killed, then the database restarted. The job fences
 * its write with `withFencedTransaction` on the same database and keeps its own ledger in a Redis
 * list ({ phase, scheduledAt, instance, token, at: Redis TIME }): phase `start`, `done` (its fenced
 * write committed) or `stale` (refused). The assertions are exact counts over that ledger and the
 * committed writes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureBuilt,
  fixturePreamble,
  libfaketimeAvailable,
  type RunFixture,
  type RunProcess,
  repoRoot,
  startRun,
} from '../cli/run-process.ts';
import {
  type MysqlServer,
  mysqlServerAvailable,
  startMysqlServer,
  uniqueTableName,
} from '../support/mysql.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';
import { skipOrFail } from '../support/services.ts';

const redisUrl = await redisUrlForTests();
const faketime = libfaketimeAvailable();
const mariadb = mysqlServerAvailable();
if (!faketime) skipOrFail('MySQL fleet test skipped: libfaketime is missing (apt-get install -y faketime).');
if (!mariadb) skipOrFail('MySQL fleet test skipped: mariadbd is not on PATH nor in /usr/sbin.');

interface Entry {
  phase: 'start' | 'done' | 'stale';
  scheduledAt: number;
  instance: string;
  token: number;
  at: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A config with one job `tick` that records its phases and writes through the fence with its token.
 * A run works 200 ms, or as long as the test's `<prefix>hold:<scheduledAt>` says (read and deleted
 * by the run of that occurrence): the test freezes or kills a holder whose run it holds, so the
 * signal lands mid-run however slowly the machine answers.
 */
function writeFixture(prefix: string, table: string): RunFixture {
  const directory = mkdtempSync(join(tmpdir(), 'resil-mysql-fleet-'));
  const configPath = join(directory, 'resil.config.mjs');
  const recordKey = `${prefix}records`;
  const dist = (path: string) => JSON.stringify(pathToFileURL(join(repoRoot, path)).href);
  writeFileSync(
    configPath,
    `${fixturePreamble()}const { MysqlLockStore, withFencedTransaction } = await import(${dist('dist/stores/mysql/index.js')});
const mysql = require('mysql2/promise');
const pool = mysql.createPool({ uri: process.env.FIXTURE_MYSQL_URL, connectionLimit: 6, connectTimeout: 1000 });
const options = { table: ${JSON.stringify(table)} };

async function record(phase, base) {
  for (let attempt = 0; ; attempt++) {
    try {
      const [seconds, micros] = await recorder.time();
      await recorder.rpush(${JSON.stringify(recordKey)}, JSON.stringify({ phase, ...base, at: Number(seconds) * 1000 + Number(micros) / 1000 }));
      return;
    } catch (error) {
      if (attempt > 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

export default defineConfig({
  store: new MysqlLockStore(pool, { ...options, timeout: 1000 }),
  instance,
  timezone: 'UTC',
  shutdownGrace: 5_000,
  jobs: [
    {
      name: 'tick',
      schedule: '* * * * * *',
      lock: { ttl: 3_000, wait: 3_000 },
      run: async (ctx) => {
        const base = { scheduledAt: ctx.scheduledAt.getTime(), instance, token: ctx.token };
        const held = Number((await recorder.getdel(${JSON.stringify(`${prefix}hold:`)} + base.scheduledAt)) ?? 0);
        await record('start', base);
        await new Promise((resolve) => setTimeout(resolve, held || 200));
        // A careless job: it ignores its signal; only the fence stops its write.
        for (let attempt = 0; ; attempt++) {
          try {
            await withFencedTransaction(pool, 'tick', ctx.token, (connection) =>
              connection.execute(${JSON.stringify(`INSERT INTO \`${table}_writes\` (scheduled_at_ms, token, instance) VALUES (?, ?, ?)`)}, [base.scheduledAt, ctx.token, instance]),
            options);
            break;
          } catch (error) {
            if (error.code === 'STALE_TOKEN') {
              await record('stale', base);
              throw error;
            }
            if (attempt > 100) throw error;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
        await record('done', base);
      },
    },
  ],
});
`,
  );
  return {
    directory,
    configPath,
    recordKey,
    prefix,
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

describe.skipIf(!redisUrl || !faketime || !mariadb)(
  'a fleet of resil run processes on MySQL (MariaDB) under faults',
  () => {
    let client: Redis;
    let server: MysqlServer;
    let pool: mysql.Pool;
    let fixture: RunFixture;
    const table = uniqueTableName('fleet');
    const processes: RunProcess[] = [];

    beforeAll(async () => {
      ensureBuilt();
      client = new Redis(redisUrl!);
      server = await startMysqlServer();
      pool = mysql.createPool({ uri: server.url, connectionLimit: 2 });
      await pool.query(
        `CREATE TABLE \`${table}_writes\` (id INT AUTO_INCREMENT PRIMARY KEY, scheduled_at_ms BIGINT, token BIGINT, instance VARCHAR(20)) ENGINE=InnoDB`,
      );
      fixture = writeFixture(uniquePrefix('fleet-mysql'), table);
    }, 200_000);
    afterAll(async () => {
      await Promise.all(processes.map((run) => run.process.stop()));
      await deleteKeys(client, fixture.prefix);
      fixture.remove();
      await client.quit();
      await pool?.end().catch(() => {});
      await server?.stop();
    });

    const redisNow = async () => {
      const [seconds, micros] = await client.time();
      return Number(seconds) * 1000 + Number(micros) / 1000;
    };
    const entries = async () =>
      (await client.lrange(fixture.recordKey, 0, -1)).map((line) => JSON.parse(line) as Entry);
    const start = (instance: string, clockOffset?: string) => {
      process.env.FIXTURE_MYSQL_URL = server.url;
      const run = startRun(fixture, { instance, redisUrl: redisUrl!, clockOffset });
      processes.push(run);
      return run;
    };
    /** Holds the run of the occurrence at `instant` for `ms` (see writeFixture), and waits for its start. */
    const heldStart = async (instant: number, ms: number): Promise<Entry> => {
      await client.set(`${fixture.prefix}hold:${instant}`, String(ms));
      const deadline = performance.now() + 10_000;
      for (;;) {
        const found = (await entries()).find(
          (entry) => entry.phase === 'start' && entry.scheduledAt === instant,
        );
        if (found) return found;
        if (performance.now() > deadline) throw new Error(`no start of ${instant} seen`);
        await sleep(10);
      }
    };

    it('3 instances (one 2 s fast), a holder frozen past its ttl, one killed, the database restarted: every occurrence completes once, none early, every stale write refused', async () => {
      const fleet = [start('a'), start('b'), start('fast', '+2s')];
      await Promise.all(
        fleet.map((run) =>
          run.waitForLine((line) => String(line.msg).startsWith('runner started'), 20_000, 'the start'),
        ),
      );
      const from = Math.ceil((await redisNow()) / 1000) * 1000 + 3_000;

      // Freeze the holder of an occurrence mid-run, for longer than its ttl.
      const frozen = await heldStart(from + 1_000, 2_000);
      const paused = fleet.find((run) => run.instance === frozen.instance)!;
      paused.process.kill('SIGSTOP');
      await sleep(5_000);
      paused.process.kill('SIGCONT');
      await sleep(2_000);
      // Kill the holder of an occurrence mid-run.
      const killedStart = await heldStart(Math.ceil((await redisNow()) / 1000) * 1000 + 2_000, 30_000);
      const killed = fleet.find((run) => run.instance === killedStart.instance)!;
      killed.process.kill('SIGKILL');
      await killed.process.exited;
      await sleep(3_000);
      // Restart the database: down for 2 s, back on its data.
      const downAt = await redisNow();
      await server.stop({ keepData: true });
      await sleep(2_000);
      server = await startMysqlServer({ port: server.port, dataDirectory: server.dataDirectory });
      const upAt = await redisNow();
      await sleep(5_000);
      const until = Math.floor((await redisNow()) / 1000) * 1000 - 3_000;
      const survivors = fleet.filter((run) => run !== killed);
      await Promise.all(survivors.map((run) => run.process.stop(15_000)));

      const all = await entries();
      const expected: number[] = [];
      for (let instant = from; instant <= until; instant += 1_000) expected.push(instant);
      const done = new Map<number, number>();
      for (const entry of all) {
        if (entry.phase === 'done') done.set(entry.scheduledAt, (done.get(entry.scheduledAt) ?? 0) + 1);
      }
      const figures = {
        occurrences: expected.length,
        completedOnce: expected.filter((instant) => done.get(instant) === 1).length,
        duplicates: [...done.values()].filter((count) => count > 1).length,
        early: all.filter((entry) => entry.phase === 'start' && entry.at < entry.scheduledAt).length,
        takeovers: fleet
          .flatMap((run) => run.lines())
          .filter((line) => line.takeover === true && line.outcome === 'success').length,
        staleRefused: all.filter((entry) => entry.phase === 'stale').length,
        lost: expected.filter((instant) => !done.has(instant)).length,
        // Due while the database was down: their fires were told it was unavailable, and retried.
        ofOutage: expected.filter((instant) => instant >= downAt && instant <= upAt).length,
      };
      console.log(
        `figures: mysql, 3 instances (one 2 s fast), SIGSTOP past ttl + SIGKILL + MariaDB restarted (${Math.round(upAt - downAt)} ms down): occurrences ${figures.occurrences}, completed once ${figures.completedOnce}, duplicates ${figures.duplicates}, early ${figures.early}, takeovers ${figures.takeovers}, stale writes refused ${figures.staleRefused}, lost ${figures.lost} (${figures.ofOutage} due during the outage)`,
      );
      expect(figures.occurrences).toBeGreaterThanOrEqual(14);
      expect(figures.ofOutage).toBeGreaterThanOrEqual(2);
      expect(figures.duplicates).toBe(0);
      expect(figures.early).toBe(0);
      expect(figures.lost).toBe(0);
      expect(figures.completedOnce).toBe(figures.occurrences);
      // The frozen and the killed holders' occurrences were taken over, with higher tokens.
      for (const victim of [frozen, killedStart]) {
        const runs = all.filter(
          (entry) => entry.scheduledAt === victim.scheduledAt && entry.phase === 'done',
        );
        expect(runs).toHaveLength(1);
        expect(runs[0]!.token).toBeGreaterThan(victim.token);
      }
      expect(figures.takeovers).toBeGreaterThanOrEqual(2);
      // The frozen holder woke up and wrote with its old token: refused.
      expect(
        all.filter((entry) => entry.phase === 'stale' && entry.instance === frozen.instance).length,
      ).toBe(1);
      // Every write that committed carried a token no lower than the one before it: no stale write
      // got through the fence, across the restart too; and each occurrence wrote once.
      const [writes] = await pool.query(`SELECT scheduled_at_ms, token FROM \`${table}_writes\` ORDER BY id`);
      const tokens = (writes as Array<{ token: number }>).map((row) => Number(row.token));
      expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
      const written = (writes as Array<{ scheduled_at_ms: number }>).map((row) =>
        Number(row.scheduled_at_ms),
      );
      expect(new Set(written).size).toBe(written.length);
      for (const run of survivors) expect(await run.process.exited).toEqual({ code: 0, signal: null });
    }, 90_000);
  },
);
