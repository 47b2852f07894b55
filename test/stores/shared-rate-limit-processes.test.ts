/**
 * Two real processes (fixtures/shared-rate-limit.ts) share one rate limit of N per window through
 * Redis, PostgreSQL and MySQL: together they are granted N, not 2N.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { mysqlUrlForTests, uniqueTableName } from '../support/mysql.ts';
import { databaseUrlForTests, uniqueSchemaName } from '../support/postgres.ts';
import { type SpawnedProcess, spawnProcess } from '../support/processes.ts';
import { deleteKeys, redisUrlForTests } from '../support/redis.ts';

const fixture = fileURLToPath(new URL('./fixtures/shared-rate-limit.ts', import.meta.url));
const redisUrl = await redisUrlForTests();
const databaseUrl = await databaseUrlForTests();
const mysqlUrl = await mysqlUrlForTests();

const limit = 25;
const callsEach = 2 * limit;

interface Done {
  granted: number;
  rejected: number;
  failed: number;
  storeUnavailable: number;
}

/** Starts two fixture processes, lets them go at once, and returns what each counted. */
async function runTwo(env: Record<string, string>): Promise<Done[]> {
  const directory = mkdtempSync(join(tmpdir(), 'resil-rate-limit-'));
  const goFile = join(directory, 'go');
  const processes: SpawnedProcess[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      processes.push(
        spawnProcess(process.execPath, ['--import', 'tsx', fixture], {
          env: {
            ...process.env,
            ...env,
            GO_FILE: goFile,
            LIMIT: String(limit),
            WINDOW: '1h',
            CALLS: String(callsEach),
            KEY: 'fleet-limit',
          },
          name: `rate-limited process ${i + 1}`,
        }),
      );
    }
    await Promise.all(processes.map((child) => child.waitForOutput(/"event":"ready"/, 20_000)));
    writeFileSync(goFile, '');
    const lines = await Promise.all(processes.map((child) => child.waitForOutput(/"event":"done"/, 20_000)));
    return lines.map((line) => JSON.parse(line) as Done);
  } finally {
    await Promise.all(processes.map((child) => child.stop()));
    rmSync(directory, { recursive: true, force: true });
  }
}

function expectOneBudget(results: Done[]) {
  for (const result of results) {
    expect(result).toMatchObject({ failed: 0, storeUnavailable: 0 });
    expect(result.granted + result.rejected).toBe(callsEach);
  }
  console.log(`granted: ${results.map((result) => result.granted).join(' + ')}`);
  // Each process alone would have been granted `limit`: 2 * limit without a shared store.
  expect(results[0]!.granted + results[1]!.granted).toBe(limit);
}

describe.skipIf(!redisUrl)('a rate limit shared by two processes through Redis', () => {
  const prefix = `rl-processes-${process.pid}-${Date.now()}:`;
  afterAll(async () => {
    const client = new Redis(redisUrl!);
    await deleteKeys(client, prefix);
    await client.quit();
  });

  it(`grants ${limit} in total to two processes making ${callsEach} calls each`, async () => {
    expectOneBudget(await runTwo({ STORE: 'redis', REDIS_URL: redisUrl!, PREFIX: prefix }));
  }, 60_000);
});

describe.skipIf(!databaseUrl)('a rate limit shared by two processes through PostgreSQL', () => {
  const schema = uniqueSchemaName('rate_limit_processes');
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  it(`grants ${limit} in total to two processes making ${callsEach} calls each`, async () => {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    expectOneBudget(await runTwo({ STORE: 'postgres', DATABASE_URL: databaseUrl!, SCHEMA: schema }));
  }, 60_000);
});

describe.skipIf(!mysqlUrl)('a rate limit shared by two processes through MySQL', () => {
  const table = uniqueTableName('rate_processes');
  afterAll(async () => {
    const pool = mysql.createPool({ uri: mysqlUrl, connectionLimit: 1 });
    for (const suffix of ['', '_occurrences', '_pauses', '_fences', '_instances', '_rate_limits']) {
      await pool.query(`DROP TABLE IF EXISTS \`${table}${suffix}\``);
    }
    await pool.end();
  });

  it(`grants ${limit} in total to two processes making ${callsEach} calls each`, async () => {
    expectOneBudget(await runTwo({ STORE: 'mysql', MYSQL_URL: mysqlUrl!, TABLE: table }));
  }, 60_000);
});
