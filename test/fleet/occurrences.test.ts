/**
 * The occurrence lifecycle under faults, with real `resil run` processes on a real store (Redis,
 * a 3-master Redis Cluster, or PostgreSQL, with Redis only for the job's own records and fence): every occurrence completes
 * once, none early, a crashed, frozen or cut-off holder's occurrence is taken over with a higher
 * token and its late writes are refused, and each overlap policy does what it says.
 *
 * The job keeps its own ledger in a Redis list: { phase, scheduledAt, instance, token, at: Redis
 * TIME }, phase `start` (run called), `done` (its fenced write accepted), `stale` (refused),
 * `aborted` (its signal aborted). It ignores its signal, as a careless job would: only the fence
 * stops its write. Each test prints one line of figures.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureBuilt,
  fixturePreamble,
  libfaketimeAvailable,
  type RunFixture,
  type RunProcess,
  startRun,
} from '../cli/run-process.ts';
import { databaseUrlForTests, uniqueSchemaName } from '../support/postgres.ts';
import { freePort } from '../support/processes.ts';
import {
  deleteKeys,
  type RedisClusterServers,
  type RedisServer,
  redisServerAvailable,
  redisUrlForTests,
  startRedisCluster,
  startRedisServer,
  uniquePrefix,
} from '../support/redis.ts';
import { skipOrFail } from '../support/services.ts';

const redisUrl = await redisUrlForTests();
const databaseUrl = await databaseUrlForTests();
const faketime = libfaketimeAvailable();
if (!faketime)
  skipOrFail('Occurrence fleet tests skipped: libfaketime is missing (apt-get install -y faketime).');

interface Entry {
  phase: 'start' | 'done' | 'stale' | 'aborted';
  job: string;
  scheduledAt: number;
  instance: string;
  token: number;
  at: number;
  code?: string;
}

interface FixtureOptions {
  /** `cluster`: a RedisLockStore on the Cluster whose startup nodes are in FIXTURE_STORE_CLUSTER. */
  store: 'redis' | 'cluster' | 'postgres';
  schedule: string;
  workMs: number;
  lock?: { ttl?: number; wait?: number };
  overlap?: string;
  /** The store's Redis connection goes to this URL instead (a proxy the test can cut). */
  storeRedisUrl?: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A config with one job `tick` that records its phases and writes through the fence with its token. */
function writeFixture(prefix: string, options: FixtureOptions): RunFixture & { schema: string } {
  const directory = mkdtempSync(join(tmpdir(), 'resil-occurrences-'));
  const configPath = join(directory, 'resil.config.mjs');
  const recordKey = `${prefix}records`;
  const schema = uniqueSchemaName('occurrences');
  const store =
    options.store !== 'postgres'
      ? `new RedisLockStore(storeClient, { prefix: ${JSON.stringify(prefix)}, commandTimeout: 500 })`
      : `new PostgresLockStore(new pg.Pool({ connectionString: process.env.FIXTURE_DATABASE_URL, max: 4, connectionTimeoutMillis: 1000, query_timeout: 1000 }), { schema: ${JSON.stringify(schema)} })`;
  writeFileSync(
    configPath,
    `${fixturePreamble()}const { PostgresLockStore } = await import(${JSON.stringify(new URL('../../dist/stores/postgres/index.js', import.meta.url).href)});
const pg = require('pg');
const storeClient = process.env.FIXTURE_STORE_CLUSTER
  ? new (require('ioredis').Cluster)(JSON.parse(process.env.FIXTURE_STORE_CLUSTER), { redisOptions: { connectTimeout: 1000 } })
  : process.env.FIXTURE_STORE_REDIS_URL ? new Redis(process.env.FIXTURE_STORE_REDIS_URL, clientOptions) : client;
storeClient.on('error', () => {});
// The fence and the records go through the store's connection when it is cut, so a cut-off
// holder's late write really arrives late.
const fenceClient = process.env.FIXTURE_STORE_REDIS_URL ? storeClient : recorder;
const fence = new RedisLockStore(fenceClient, { prefix: ${JSON.stringify(`${prefix}fence:`)}, commandTimeout: 2000 });

async function record(phase, base, extra = {}) {
  for (let attempt = 0; ; attempt++) {
    try {
      const [seconds, micros] = await recorder.time();
      await recorder.rpush(${JSON.stringify(recordKey)}, JSON.stringify({ phase, ...base, at: Number(seconds) * 1000 + Number(micros) / 1000, ...extra }));
      return;
    } catch (error) {
      if (attempt > 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

export default defineConfig({
  store: ${store},
  instance,
  timezone: 'UTC',
  shutdownGrace: 5_000,
  jobs: [
    {
      name: 'tick',
      schedule: ${JSON.stringify(options.schedule)},
      ${options.lock ? `lock: ${JSON.stringify(options.lock)},` : ''}
      ${options.overlap ? `overlap: ${JSON.stringify(options.overlap)},` : ''}
      run: async (ctx) => {
        const base = { job: ctx.job, scheduledAt: ctx.scheduledAt.getTime(), instance, token: ctx.token };
        ctx.signal.addEventListener('abort', () => {
          record('aborted', base, { code: ctx.signal.reason?.code }).catch(() => {});
        }, { once: true });
        await record('start', base);
        await new Promise((resolve) => setTimeout(resolve, ${options.workMs}));
        for (let attempt = 0; ; attempt++) {
          try {
            await fence.fencedSet('tick', ctx.token, 'latest', String(base.scheduledAt));
            break;
          } catch (error) {
            if (error.code === 'STALE_TOKEN') {
              await record('stale', base, { code: error.code });
              throw error;
            }
            if (attempt > 50) throw error;
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
    schema,
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

/** A TCP proxy to Redis that the test can cut (hold every byte, then reset every connection). */
async function startProxy(
  target: URL,
): Promise<{ url: string; cut(): void; heal(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let cut = false;
  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = new Socket();
    upstream.connect(Number(target.port || 6379), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (data) => {
      if (!cut) upstream.write(data);
    });
    upstream.on('data', (data) => {
      if (!cut) client.write(data);
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const url = new URL(target.href);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.href,
    cut: () => {
      cut = true;
    },
    heal: () => {
      cut = false;
      // A half-dropped Redis stream would corrupt the protocol: start the connections afresh.
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

interface Figures {
  occurrences: number;
  completedOnce: number;
  duplicates: number;
  early: number;
  takeovers: number;
  staleRefused: number;
  lost: number;
}

/** Counts over the job's own ledger for the occurrences in [from, until] (every `periodMs`). */
function figures(
  entries: Entry[],
  fleet: RunProcess[],
  from: number,
  until: number,
  periodMs: number,
): Figures {
  const expected: number[] = [];
  for (let instant = from; instant <= until; instant += periodMs) expected.push(instant);
  const done = new Map<number, number>();
  for (const entry of entries) {
    if (entry.phase === 'done') done.set(entry.scheduledAt, (done.get(entry.scheduledAt) ?? 0) + 1);
  }
  const takeovers = fleet
    .flatMap((run) => run.lines())
    .filter((line) => line.takeover === true && line.outcome === 'success').length;
  return {
    occurrences: expected.length,
    completedOnce: expected.filter((instant) => done.get(instant) === 1).length,
    duplicates: [...done.values()].filter((count) => count > 1).length,
    early: entries.filter((entry) => entry.phase === 'start' && entry.at < entry.scheduledAt).length,
    takeovers,
    staleRefused: entries.filter((entry) => entry.phase === 'stale').length,
    lost: expected.filter((instant) => !done.has(instant)).length,
  };
}

function report(name: string, result: Figures): void {
  console.log(
    `figures: ${name}: occurrences ${result.occurrences}, completed once ${result.completedOnce}, duplicates ${result.duplicates}, early ${result.early}, takeovers ${result.takeovers}, stale writes refused ${result.staleRefused}, lost ${result.lost}`,
  );
}

describe.skipIf(!redisUrl || !faketime)(
  'occurrence lifecycle: a fleet of resil run processes under faults',
  () => {
    let client: Redis;
    let pool: pg.Pool | undefined;
    const fixtures: Array<RunFixture & { schema: string }> = [];
    const processes: RunProcess[] = [];

    beforeAll(() => {
      ensureBuilt();
      client = new Redis(redisUrl!);
      if (databaseUrl) {
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
      await client.quit();
      await pool?.end();
    });

    const redisNow = async () => {
      const [seconds, micros] = await client.time();
      return Number(seconds) * 1000 + Number(micros) / 1000;
    };
    const entries = async (fixture: RunFixture) =>
      (await client.lrange(fixture.recordKey, 0, -1)).map((line) => JSON.parse(line) as Entry);
    const fixtureFor = (name: string, options: FixtureOptions) => {
      const fixture = writeFixture(uniquePrefix(name), options);
      fixtures.push(fixture);
      return fixture;
    };
    /** The Cluster the `cluster` store runs on, started by the first test that needs it. */
    let cluster: RedisClusterServers | undefined;
    afterAll(() => cluster?.stop());
    const start = (
      fixture: RunFixture,
      instance: string,
      options: { clockOffset?: string; storeRedisUrl?: string; cluster?: RedisClusterServers } = {},
    ) => {
      const variables = {
        FIXTURE_STORE_REDIS_URL: options.storeRedisUrl,
        FIXTURE_STORE_CLUSTER: options.cluster && JSON.stringify(options.cluster.startupNodes),
      };
      const previous = Object.fromEntries(Object.keys(variables).map((name) => [name, process.env[name]]));
      const set = (values: Record<string, string | undefined>) => {
        for (const [name, value] of Object.entries(values)) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      };
      set(variables);
      const run = startRun(fixture, { instance, redisUrl: redisUrl!, clockOffset: options.clockOffset });
      set(previous);
      processes.push(run);
      return run;
    };
    const started = (run: RunProcess) =>
      run.waitForLine((line) => String(line.msg).startsWith('runner started'), 20_000, 'the runner start');
    /** Three instances on the store's own Redis at `url`, one of them 2 s fast, once all have started. */
    const fleetOfThree = async (fixture: RunFixture, url: string): Promise<RunProcess[]> => {
      const options = { storeRedisUrl: url };
      const fleet = [
        start(fixture, 'a', options),
        start(fixture, 'b', options),
        start(fixture, 'fast', { ...options, clockOffset: '+2s' }),
      ];
      await Promise.all(fleet.map(started));
      return fleet;
    };
    /** Stops `server`, and after `downMs` starts it again on its port; when it went down and came back (Redis TIME). */
    const restart = async (server: RedisServer, downMs: number, args?: readonly string[]) => {
      await server.stop();
      // Down from when it stopped: while it shuts down (an AOF written on a busy machine) it may
      // still grant a claim, and that run is one in flight when the store went down.
      const downAt = await redisNow();
      await sleep(downMs);
      const restarted = await startRedisServer({ port: server.port, args });
      return { server: restarted, downAt, upAt: await redisNow() };
    };
    /** The first start record at or after `after` (Redis TIME), waiting for it. */
    const nextStart = async (fixture: RunFixture, after: number, timeoutMs = 10_000): Promise<Entry> => {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const found = (await entries(fixture)).find((entry) => entry.phase === 'start' && entry.at >= after);
        if (found) return found;
        if (performance.now() > deadline) {
          const outputs = processes.map(
            (run) => `--- ${run.instance}:\n${run.process.output().slice(-1500)}`,
          );
          throw new Error(`no job start seen:\n${outputs.join('\n')}`);
        }
        await sleep(10);
      }
    };

    for (const store of ['redis', 'cluster', 'postgres'] as const) {
      it.skipIf((store === 'postgres' && !databaseUrl) || (store === 'cluster' && !redisServerAvailable()))(
        `${store}: every occurrence completes once with 3 instances (one 2 s fast) through a frozen holder and a killed one (buffer-all via wait >= ttl)`,
        async () => {
          const fixture = fixtureFor(`occ-${store}`, {
            store,
            schedule: '* * * * * *',
            workMs: 200,
            lock: { ttl: 3_000, wait: 3_000 },
          });
          // The store creates its tables, not the schema they live in.
          if (store === 'postgres') await pool!.query(`CREATE SCHEMA "${fixture.schema}"`);
          if (store === 'cluster') cluster ??= await startRedisCluster({ masters: 3 });
          const on = store === 'cluster' ? { cluster } : {};
          const fleet = [
            start(fixture, 'a', on),
            start(fixture, 'b', on),
            start(fixture, 'fast', { ...on, clockOffset: '+2s' }),
          ];
          await Promise.all(fleet.map(started));
          const from = Math.ceil((await redisNow()) / 1000) * 1000 + 3_000;

          // Freeze the holder of an occurrence right after its start, for longer than its ttl.
          const frozen = await nextStart(fixture, from);
          const paused = fleet.find((run) => run.instance === frozen.instance)!;
          paused.process.kill('SIGSTOP');
          await sleep(5_000);
          paused.process.kill('SIGCONT');
          await sleep(3_000);
          // Kill the holder of the next occurrence mid-run.
          const killedStart = await nextStart(fixture, await redisNow());
          const killed = fleet.find((run) => run.instance === killedStart.instance)!;
          killed.process.kill('SIGKILL');
          await killed.process.exited;
          await sleep(6_000);
          const until = Math.floor((await redisNow()) / 1000) * 1000 - 3_000;
          const survivors = fleet.filter((run) => run !== killed);
          await Promise.all(survivors.map((run) => run.process.stop(15_000)));

          const all = await entries(fixture);
          const result = figures(all, fleet, from, until, 1_000);
          report(`${store}, 3 instances, SIGSTOP past ttl + SIGKILL`, result);
          expect(result.occurrences).toBeGreaterThanOrEqual(10);
          expect(result.duplicates).toBe(0);
          expect(result.early).toBe(0);
          expect(result.lost).toBe(0);
          expect(result.completedOnce).toBe(result.occurrences);
          // The frozen holder's and the killed holder's occurrences were taken over, with higher tokens.
          for (const victim of [frozen, killedStart]) {
            const runs = all.filter((entry) => entry.scheduledAt === victim.scheduledAt);
            const done = runs.filter((entry) => entry.phase === 'done');
            expect(done).toHaveLength(1);
            expect(done[0]!.token).toBeGreaterThan(victim.token);
          }
          expect(result.takeovers).toBeGreaterThanOrEqual(2);
          // The frozen holder woke up and wrote with its old token: refused.
          expect(
            all.filter((entry) => entry.phase === 'stale' && entry.instance === frozen.instance).length,
          ).toBeGreaterThanOrEqual(1);
        },
        90_000,
      );
    }

    it.skipIf(!redisServerAvailable())(
      'redis: a store restart that loses every key (no persistence): no occurrence runs twice or early, none is lost outside the outage + ttl',
      async () => {
        let server = await startRedisServer();
        try {
          const fixture = fixtureFor('occ-restart', {
            store: 'redis',
            schedule: '* * * * * *',
            workMs: 200,
            lock: { ttl: 3_000, wait: 3_000 },
          });
          const fleet = await fleetOfThree(fixture, server.url);
          const from = Math.ceil((await redisNow()) / 1000) * 1000 + 3_000;
          await sleep(from + 4_000 - (await redisNow()));
          let downAt: number;
          let upAt: number;
          ({ server, downAt, upAt } = await restart(server, 2_000));
          await sleep(8_000);
          const until = Math.floor((await redisNow()) / 1000) * 1000 - 3_000;
          await Promise.all(fleet.map((run) => run.process.stop(15_000)));

          const all = await entries(fixture);
          const result = figures(all, fleet, from, until, 1_000);
          // An occurrence may be lost while the store is down, and until a lease taken just before
          // the outage could have expired after it.
          const outage = { from: downAt - 1_000, until: upAt + 3_000 + 1_000 };
          const lostOutside = [];
          for (let instant = from; instant <= until; instant += 1_000) {
            const done = all.some((entry) => entry.phase === 'done' && entry.scheduledAt === instant);
            if (!done && (instant < outage.from || instant > outage.until)) lostOutside.push(instant);
          }
          report(
            `redis, 3 instances (one 2 s fast), Redis restarted without persistence (${Math.round(upAt - downAt)} ms down)`,
            result,
          );
          expect(result.occurrences).toBeGreaterThanOrEqual(12);
          expect(result.duplicates).toBe(0);
          expect(result.early).toBe(0);
          expect(lostOutside).toEqual([]);
          for (const run of fleet) expect(await run.process.exited).toEqual({ code: 0, signal: null });
        } finally {
          await server.stop();
        }
      },
      90_000,
    );

    for (const store of ['redis', 'cluster'] as const) {
      it.skipIf(!redisServerAvailable())(
        `${store}: the store down 5 s and back with its data: every occurrence of the outage completes once after it, none early`,
        async () => {
          // Persistence on: the restart keeps every lease, token and record (SHUTDOWN writes the AOF;
          // a Cluster node its cluster config too).
          const dataDirectory = mkdtempSync(join(tmpdir(), 'resil-redis-aof-'));
          const persistent = ['--appendonly', 'yes', '--dir', dataDirectory];
          let server = store === 'redis' ? await startRedisServer({ args: persistent }) : undefined;
          const ownCluster =
            store === 'cluster' ? await startRedisCluster({ masters: 3, persistent: true }) : undefined;
          try {
            const fixture = fixtureFor(`occ-outage-${store}`, {
              store,
              schedule: '* * * * * *',
              workMs: 100,
              lock: { ttl: 3_000 },
              // The occurrences of the outage all come due when it ends: they run one after another.
              overlap: 'buffer-all',
            });
            let fleet: RunProcess[];
            if (ownCluster === undefined) fleet = await fleetOfThree(fixture, server!.url);
            else {
              const on = { cluster: ownCluster };
              fleet = [
                start(fixture, 'a', on),
                start(fixture, 'b', on),
                start(fixture, 'fast', { ...on, clockOffset: '+2s' }),
              ];
              await Promise.all(fleet.map(started));
            }
            const from = Math.ceil((await redisNow()) / 1000) * 1000 + 3_000;
            await sleep(from + 3_000 - (await redisNow()));
            let downAt = 0;
            let upAt: number;
            if (ownCluster === undefined)
              ({ server, downAt, upAt } = await restart(server!, 5_000, persistent));
            else {
              // Every node down (its shards' leases, tokens and records with it), then back.
              await ownCluster.restart(5_000, async () => {
                downAt = await redisNow();
              });
              upAt = await redisNow();
            }
            await sleep(10_000);
            const until = Math.floor((await redisNow()) / 1000) * 1000 - 3_000;
            await Promise.all(fleet.map((run) => run.process.stop(15_000)));

            const all = await entries(fixture);
            const result = figures(all, fleet, from, until, 1_000);
            const ofOutage = all.filter(
              (entry) => entry.phase === 'done' && entry.scheduledAt > downAt && entry.scheduledAt < upAt,
            );
            report(
              `${store}, 3 instances (one 2 s fast), ${store === 'redis' ? 'Redis' : 'every Cluster node'} down ${Math.round(upAt - downAt)} ms and restarted with its data`,
              result,
            );
            expect(result.occurrences).toBeGreaterThanOrEqual(15);
            // Each occurrence due while the store was down ran once, after it came back.
            const outageRuns = new Map<number, number>();
            for (const entry of ofOutage)
              outageRuns.set(entry.scheduledAt, (outageRuns.get(entry.scheduledAt) ?? 0) + 1);
            expect(outageRuns.size).toBeGreaterThanOrEqual(4);
            expect([...outageRuns.values()].every((count) => count === 1)).toBe(true);
            // A run in flight when the store went down outlives its lease (its fenced write waits for
            // the store, and it ignores its aborted signal): it may be taken over after the outage,
            // and both runs' writes pass the fence in token order. No occurrence due later ran twice.
            const twice = [
              ...new Set(all.filter((entry) => entry.phase === 'done').map((entry) => entry.scheduledAt)),
            ].filter(
              (instant) =>
                all.filter((entry) => entry.phase === 'done' && entry.scheduledAt === instant).length > 1,
            );
            expect(twice.filter((instant) => instant > downAt)).toEqual([]);
            expect(result.early).toBe(0);
            expect(result.lost).toBe(0);
            for (const run of fleet) expect(await run.process.exited).toEqual({ code: 0, signal: null });
          } finally {
            await server?.stop();
            await ownCluster?.stop();
            rmSync(dataDirectory, { recursive: true, force: true });
          }
        },
        90_000,
      );
    }

    it('default overlap and wait: a killed holder of a long run is taken over, once (ttl 3 s to keep it short)', async () => {
      const fixture = fixtureFor('occ-default', {
        store: 'redis',
        schedule: '*/10 * * * * *',
        workMs: 4_000,
        lock: { ttl: 3_000 },
      });
      const fleet = [start(fixture, 'a'), start(fixture, 'b')];
      await Promise.all(fleet.map(started));
      const first = await nextStart(fixture, 0, 15_000);
      await sleep(1_000);
      const holder = fleet.find((run) => run.instance === first.instance)!;
      holder.process.kill('SIGKILL');
      await holder.process.exited;
      const killedAt = await redisNow();
      const other = fleet.find((run) => run !== holder)!;
      await other.waitForLine(
        (line) => line.outcome === 'success' && Date.parse(String(line.scheduledAt)) === first.scheduledAt,
        15_000,
        'the takeover run',
      );
      await other.process.stop(15_000);
      const all = (await entries(fixture)).filter((entry) => entry.scheduledAt === first.scheduledAt);
      const result = figures(all, fleet, first.scheduledAt, first.scheduledAt, 1_000);
      report('redis, 2 instances, default options, SIGKILL mid-run', result);
      const starts = all.filter((entry) => entry.phase === 'start');
      expect(starts.map((entry) => entry.instance)).toEqual([holder.instance, other.instance]);
      expect(all.filter((entry) => entry.phase === 'done').map((entry) => entry.instance)).toEqual([
        other.instance,
      ]);
      // Within ttl + 1 s of the kill (the lease expires at most a ttl after it), never before it.
      expect(starts[1]!.at).toBeGreaterThanOrEqual(killedAt);
      expect(starts[1]!.at - killedAt).toBeLessThanOrEqual(3_000 + 1_000);
      expect(starts[1]!.token).toBeGreaterThan(starts[0]!.token);
      expect(result.takeovers).toBe(1);
    }, 60_000);

    it('a holder cut off from Redis past its ttl is taken over, its late write refused, and it recovers after the heal', async () => {
      const proxy = await startProxy(new URL(redisUrl!));
      try {
        const fixture = fixtureFor('occ-cut', {
          store: 'redis',
          schedule: '*/4 * * * * *',
          workMs: 1_500,
          lock: { ttl: 2_000 },
        });
        const cutOff = start(fixture, 'cut', { storeRedisUrl: proxy.url });
        // Its clock 0.4 s behind, the other instance fires later and leaves the first claim of each
        // occurrence to the proxied one, which would otherwise lose most races (its round trips go
        // through the proxy) and might not run one within the wait below.
        const other = start(fixture, 'other', { clockOffset: '-0.4s' });
        await Promise.all([started(cutOff), started(other)]);
        // Cut the proxied instance off during one of its own runs.
        let victim: Entry | undefined;
        const deadline = performance.now() + 40_000;
        while (victim === undefined && performance.now() < deadline) {
          const found = await nextStart(fixture, await redisNow(), 10_000);
          if (found.instance === cutOff.instance) victim = found;
          else await sleep(500);
        }
        expect(victim).toBeDefined();
        proxy.cut();
        await sleep(4_500);
        proxy.heal();
        // It recovers: its fires reach the store again (it runs an occurrence, or finds one done
        // or running elsewhere; behind the proxy it is the slower one, so it may lose every race).
        const healedAt = cutOff.lines().length;
        await cutOff.waitForLine(
          (line) =>
            typeof line.outcome === 'string' &&
            line.reason !== 'store-unavailable' &&
            Date.parse(String(line.scheduledAt)) > victim!.scheduledAt,
          30_000,
          'a fire that reached the store after the heal',
          healedAt,
        );
        await Promise.all([cutOff, other].map((run) => run.process.stop(15_000)));
        const all = await entries(fixture);
        const runs = all.filter((entry) => entry.scheduledAt === victim!.scheduledAt);
        const result = figures(all, [cutOff, other], victim!.scheduledAt, victim!.scheduledAt, 4_000);
        report('redis, 2 instances, holder cut off past its ttl', result);
        expect(runs.filter((entry) => entry.phase === 'done').map((entry) => entry.instance)).toEqual([
          other.instance,
        ]);
        expect(runs.filter((entry) => entry.phase === 'stale').map((entry) => entry.instance)).toEqual([
          cutOff.instance,
        ]);
        expect(result.duplicates).toBe(0);
        expect(result.takeovers).toBeGreaterThanOrEqual(1);
      } finally {
        await proxy.close();
      }
    }, 90_000);

    /** A 2-instance fleet, an every-2-s job working 3 s: every occurrence overlaps the previous one. */
    const overlapCases: Array<{ overlap: string; check: (all: Entry[], instants: number[]) => void }> = [
      {
        overlap: 'skip',
        check: (all, instants) => {
          const done = all.filter((entry) => entry.phase === 'done');
          expect(done.length).toBeGreaterThanOrEqual(2);
          expect(done.length).toBeLessThan(instants.length);
          expectNoOverlap(all);
        },
      },
      {
        overlap: 'buffer-one',
        check: (all, instants) => {
          const done = all.filter((entry) => entry.phase === 'done');
          expect(done.length).toBeLessThan(instants.length);
          expectNoOverlap(all);
          expectOldestFirst(all);
        },
      },
      {
        overlap: 'buffer-all',
        check: (all) => {
          // Every occurrence runs, one at a time, oldest first, each once.
          const starts = all.filter((entry) => entry.phase === 'start');
          expect(new Set(starts.map((entry) => entry.scheduledAt)).size).toBe(starts.length);
          expectNoOverlap(all);
          expectOldestFirst(all);
        },
      },
      {
        overlap: 'cancel-other',
        check: (all) => {
          // Each newer occurrence aborted the running one.
          expect(all.filter((entry) => entry.phase === 'aborted').length).toBeGreaterThanOrEqual(2);
          expect(
            all.filter((entry) => entry.phase === 'aborted').every((entry) => entry.code === 'LOCK_LOST'),
          ).toBe(true);
        },
      },
      {
        overlap: 'allow-all',
        check: (all, instants) => {
          // Every occurrence started on time, overlapping the previous one, each under its own token.
          const starts = all.filter((entry) => entry.phase === 'start');
          for (const instant of instants)
            expect(starts.filter((entry) => entry.scheduledAt === instant)).toHaveLength(1);
          expect(new Set(starts.map((entry) => entry.token)).size).toBe(starts.length);
          expect(all.filter((entry) => entry.phase === 'done').length).toBe(instants.length);
        },
      },
    ];

    function expectNoOverlap(all: Entry[]): void {
      const starts = all.filter((entry) => entry.phase === 'start').sort((a, b) => a.at - b.at);
      const ends = new Map(
        all.filter((entry) => entry.phase === 'done').map((entry) => [entry.scheduledAt, entry.at]),
      );
      for (let index = 1; index < starts.length; index++) {
        const previousEnd = ends.get(starts[index - 1]!.scheduledAt);
        if (previousEnd !== undefined) expect(starts[index]!.at).toBeGreaterThanOrEqual(previousEnd - 5);
      }
    }

    function expectOldestFirst(all: Entry[]): void {
      const order = all.filter((entry) => entry.phase === 'start').map((entry) => entry.scheduledAt);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }

    it("each overlap policy on a 2-instance fleet, from the job's own ledger", async () => {
      const runs = overlapCases.map((policy) => {
        const fixture = fixtureFor(`occ-${policy.overlap}`, {
          store: 'redis',
          schedule: '*/2 * * * * *',
          workMs: 3_000,
          lock: { ttl: 2_000 },
          overlap: policy.overlap,
        });
        return { policy, fixture, fleet: [start(fixture, 'a'), start(fixture, 'b')] };
      });
      await Promise.all(runs.flatMap((run) => run.fleet.map(started)));
      const from = Math.ceil((await redisNow()) / 2_000) * 2_000 + 2_000;
      const until = from + 8_000;
      // Until the window's last occurrence has had its 3 s of work.
      await sleep(until + 4_000 - (await redisNow()));
      await Promise.all(runs.flatMap((run) => run.fleet.map((instance) => instance.process.stop(15_000))));
      const instants: number[] = [];
      for (let instant = from; instant <= until; instant += 2_000) instants.push(instant);
      for (const { policy, fixture } of runs) {
        const all = (await entries(fixture)).filter(
          (entry) => entry.scheduledAt >= from && entry.scheduledAt <= until,
        );
        const done = all.filter((entry) => entry.phase === 'done').length;
        console.log(
          `figures: overlap ${policy.overlap}: occurrences ${instants.length}, started ${all.filter((entry) => entry.phase === 'start').length}, completed ${done}, aborted ${all.filter((entry) => entry.phase === 'aborted').length}, duplicates ${figures(all, [], from, until, 2_000).duplicates}`,
        );
        expect(figures(all, [], from, until, 2_000).duplicates).toBe(0);
        policy.check(all, instants);
      }
    }, 90_000);
  },
);
