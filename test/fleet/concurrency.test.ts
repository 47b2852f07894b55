/**
 * A job's `concurrency` across a fleet: two `resil run` processes on one store (Redis, then
 * PostgreSQL) run a job that fires every second and works 2.5 s, with `concurrency: 2` and
 * `overlap: 'skip'`. Unbounded, three of its occurrences would run at once; bounded, the fleet
 * reaches two and never more, and skips the rest as `overlap`.
 *
 * The job keeps its own ledger: each run appends a `start` line, then an `end` line, with
 * `Date.now()` (both processes are on this machine, one clock), to a file. The overlap is counted
 * from that file alone. Each test prints one line of figures.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureBuilt,
  fixturePreamble,
  type RunFixture,
  type RunProcess,
  startRun,
} from '../cli/run-process.ts';
import { databaseUrlForTests, uniqueSchemaName } from '../support/postgres.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';

const redisUrl = await redisUrlForTests();
const databaseUrl = await databaseUrlForTests();

interface Line {
  phase: 'start' | 'end';
  scheduledAt: number;
  instance: string;
  token: number;
  at: number;
}

const workMs = 2_500;

/** A config with one job `crunch` (every second, 2.5 s of work, concurrency 2) that logs its runs to a file. */
function writeFixture(
  store: 'redis' | 'postgres',
  prefix: string,
  schema: string,
): RunFixture & { file: string } {
  const directory = mkdtempSync(join(tmpdir(), 'resil-concurrency-'));
  const configPath = join(directory, 'resil.config.mjs');
  const file = join(directory, 'runs.jsonl');
  const storeExpression =
    store === 'redis'
      ? `new RedisLockStore(client, { prefix: ${JSON.stringify(prefix)}, commandTimeout: 500 })`
      : `new PostgresLockStore(new pg.Pool({ connectionString: process.env.FIXTURE_DATABASE_URL, max: 4 }), { schema: ${JSON.stringify(schema)} })`;
  writeFileSync(
    configPath,
    `${fixturePreamble()}const { PostgresLockStore } = await import(${JSON.stringify(new URL('../../dist/stores/postgres/index.js', import.meta.url).href)});
const pg = require('pg');
const { appendFileSync } = require('node:fs');

export default defineConfig({
  store: ${storeExpression},
  instance,
  timezone: 'UTC',
  shutdownGrace: 5_000,
  jobs: [
    {
      name: 'crunch',
      schedule: '* * * * * *',
      concurrency: 2,
      overlap: 'skip',
      run: async (ctx) => {
        const line = (phase) => appendFileSync(${JSON.stringify(file)}, JSON.stringify({ phase, scheduledAt: ctx.scheduledAt.getTime(), instance, token: ctx.token, at: Date.now() }) + '\\n');
        line('start');
        await new Promise((resolve) => setTimeout(resolve, ${workMs}));
        line('end');
      },
    },
  ],
});
`,
  );
  return {
    directory,
    configPath,
    file,
    recordKey: `${prefix}records`,
    prefix,
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

/** The most runs under way at once, by the file's start and end lines (an end before a start at the same ms). */
function mostAtOnce(lines: readonly Line[]): number {
  const events = lines
    .map((line) => ({ at: line.at, change: line.phase === 'start' ? 1 : -1 }))
    .sort((a, b) => a.at - b.at || a.change - b.change);
  let running = 0;
  let most = 0;
  for (const { change } of events) {
    running += change;
    most = Math.max(most, running);
  }
  return most;
}

describe.skipIf(!redisUrl)('concurrency across a fleet of resil run processes', () => {
  let client: Redis;
  let pool: pg.Pool | undefined;
  const fixtures: Array<RunFixture & { file: string; schema: string }> = [];
  const processes: RunProcess[] = [];

  beforeAll(() => {
    ensureBuilt();
    client = new Redis(redisUrl!);
    if (databaseUrl !== undefined) {
      process.env.FIXTURE_DATABASE_URL = databaseUrl;
      pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    }
  }, 200_000);
  afterAll(async () => {
    await Promise.all(processes.map((run) => run.process.stop()));
    for (const fixture of fixtures) {
      await deleteKeys(client, fixture.prefix);
      await pool?.query(`DROP SCHEMA IF EXISTS "${fixture.schema}" CASCADE`);
      fixture.remove();
    }
    await pool?.end();
    await client.quit();
  });

  for (const store of ['redis', 'postgres'] as const) {
    it.skipIf(store === 'postgres' && databaseUrl === undefined)(
      `${store}: concurrency 2 on two instances runs two occurrences at once, never three`,
      async () => {
        const prefix = uniquePrefix(`concurrency-${store}`);
        const schema = uniqueSchemaName('concurrency');
        const fixture = { ...writeFixture(store, prefix, schema), schema };
        fixtures.push(fixture);
        // The store creates its tables, not the schema they live in.
        if (store === 'postgres') await pool!.query(`CREATE SCHEMA "${schema}"`);
        const fleet = ['a', 'b'].map((instance) => {
          const run = startRun(fixture, { instance, redisUrl: redisUrl! });
          processes.push(run);
          return run;
        });
        await Promise.all(
          fleet.map((run) =>
            run.waitForLine(
              (line) => String(line.msg).startsWith('runner started'),
              15_000,
              'the runner start',
            ),
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 9_000));
        await Promise.all(fleet.map((run) => run.process.stop(15_000)));
        for (const run of fleet) expect(await run.process.exited).toEqual({ code: 0, signal: null });

        const lines = readFileSync(fixture.file, 'utf8')
          .split('\n')
          .filter((text) => text !== '')
          .map((text) => JSON.parse(text) as Line);
        const starts = lines.filter((line) => line.phase === 'start');
        const ends = lines.filter((line) => line.phase === 'end');
        const skipped = fleet.flatMap((run) =>
          run.lines().filter((line) => line.outcome === 'skipped' && line.reason === 'overlap'),
        );
        const most = mostAtOnce(lines);
        const byInstance = Object.fromEntries(
          fleet.map((run) => [run.instance, starts.filter((line) => line.instance === run.instance).length]),
        );
        console.log(
          `[concurrency ${store}] runs ${starts.length} (by instance ${JSON.stringify(byInstance)}), ended ${ends.length}, most at once ${most}, skipped as overlap ${skipped.length}`,
        );
        expect(most).toBe(2);
        expect(starts.length).toBeGreaterThanOrEqual(4);
        // Every run ended (a graceful stop waits for the running ones), each occurrence ran once, under its own token.
        expect(ends.length).toBe(starts.length);
        expect(new Set(starts.map((line) => line.scheduledAt)).size).toBe(starts.length);
        expect(new Set(starts.map((line) => line.token)).size).toBe(starts.length);
        // Every second fires one, and 2.5 s of work keeps two busy: the third is skipped.
        expect(skipped.length).toBeGreaterThan(0);
      },
      60_000,
    );
  }
});
