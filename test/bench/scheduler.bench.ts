/**
 * Fire lateness of `resil run`'s engine against croner alone: how long after the schedule's instant
 * the job's function starts. Four setups run side by side in one process, interleaved: each fires
 * every fourth second, on its own second (0, 1, 2, 3 mod 4), so they never delay each other while
 * load on the machine hits all of them alike:
 * - croner calling a function (the baseline);
 * - JobRunner with a MemoryLockStore: the engine's own cost (occurrence, store clock, lock, run
 *   ledger check, pipeline);
 * - JobRunner with a RedisLockStore: adds the store's round trip (the claim: one script when this
 *   process wrote the job's ledger last, else a read and a write);
 * - croner calling a function that sends Redis one PING: what a first round trip to Redis costs
 *   after seconds of idle, on this machine (a process and a server that were asleep wake up).
 *
 * The first fire of each setup warms up (modules load, code compiles) and is not counted.
 *
 * `npm run bench -- scheduler` (BENCH_FIRES sets the fires per setup, default 20: about 80 s).
 */
import { Cron } from 'croner';
import { Redis } from 'ioredis';
import pino from 'pino';
import { createLogger } from '../../src/cli/logger.ts';
import { MemoryLockStore } from '../../src/ledger/memory-store.ts';
import type { JobContext, ResolvedConfig } from '../../src/scheduler/job.ts';
import { JobRunner } from '../../src/scheduler/runner.ts';
import { RedisLockStore } from '../../src/stores/redis/store.ts';
import type { LockStore } from '../../src/strategies/lock/store.ts';
import { resolvedJob } from '../scheduler/fixtures.ts';
import { type BenchOptions, printTable } from './harness.ts';

/** Wall-clock time with sub-millisecond resolution. */
const preciseNow = () => performance.timeOrigin + performance.now();

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function median(sorted: number[]): number {
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function cronerAlone(schedule: string, fires: number): Promise<number[]> {
  const lateness: number[] = [];
  return new Promise((resolve) => {
    let expected: number | undefined;
    const cron = new Cron(schedule, () => {
      const now = preciseNow();
      if (expected !== undefined) lateness.push(now - expected);
      expected = cron.nextRun()?.getTime();
      if (lateness.length > fires) {
        lateness.shift(); // the warm-up fire
        cron.stop();
        resolve(lateness);
      }
    });
    expected = cron.nextRun()?.getTime();
  });
}

/**
 * croner calling a function that sends Redis a PING: the lateness of a fire whose first act is one
 * round trip to Redis, after the same idle seconds (the floor of any fire that asks Redis first).
 */
async function cronerThenPing(client: Redis, schedule: string, fires: number): Promise<number[]> {
  const lateness: number[] = [];
  return new Promise((resolve) => {
    let expected: number | undefined;
    const cron = new Cron(schedule, async () => {
      const due = expected;
      expected = cron.nextRun()?.getTime();
      await client.ping();
      if (due !== undefined) lateness.push(preciseNow() - due);
      if (lateness.length > fires) {
        lateness.shift(); // the warm-up fire
        cron.stop();
        resolve(lateness);
      }
    });
    expected = cron.nextRun()?.getTime();
  });
}

async function resilRunner(
  store: LockStore,
  schedule: string,
  fires: number,
  name: string,
): Promise<number[]> {
  const lateness: number[] = [];
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const config: ResolvedConfig = {
    filepath: 'bench',
    store,
    instance: 'bench',
    shutdownGraceMs: 5_000,
    ledgerRetentionMs: 3_600_000,
    ledgerRecordLimit: 100,
    jobs: [
      resolvedJob({
        name,
        schedule,
        timezone: undefined,
        run: (ctx: JobContext) => {
          lateness.push(preciseNow() - ctx.scheduledAt.getTime());
          if (lateness.length > fires) {
            lateness.shift(); // the warm-up fire
            done();
          }
        },
      }),
    ],
  };
  // A real pino logger (writing to /dev/null), buffered as `resil run`'s: each fire pays for its line as in production.
  const logger = createLogger({
    destination: pino.destination({ dest: '/dev/null', sync: true }),
    buffered: true,
  });
  const runner = new JobRunner({ config, logger });
  await runner.start();
  await finished;
  await runner.stop();
  return lateness;
}

export default async function (options: BenchOptions): Promise<void> {
  const fires = options.smoke ? 1 : Number(process.env.BENCH_FIRES) || 20;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const client = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  client.on('error', () => {});
  const prefix = `resil-bench:${process.pid}:`;
  let redisStore: RedisLockStore | undefined;
  try {
    await client.connect();
    redisStore = new RedisLockStore(client, { prefix });
  } catch (error) {
    console.log(`(RedisLockStore row skipped: ${(error as Error).message})`);
  }

  const [croner, memory, redis, ping] = await Promise.all([
    cronerAlone('*/4 * * * * *', fires),
    resilRunner(new MemoryLockStore(), '1-59/4 * * * * *', fires, 'bench-memory'),
    redisStore ? resilRunner(redisStore, '2-59/4 * * * * *', fires, 'bench-redis') : undefined,
    redisStore ? cronerThenPing(client, '3-59/4 * * * * *', fires) : undefined,
  ]);
  if (redisStore) {
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
  }
  client.disconnect();

  const rows: Array<[string, number[]]> = [
    ['croner alone', croner],
    ['resil JobRunner, MemoryLockStore', memory],
  ];
  if (redis) rows.push(['resil JobRunner, RedisLockStore', redis]);
  if (ping) rows.push(['croner, then one Redis PING', ping]);
  const baseline = median([...croner].sort((a, b) => a - b));
  printTable(
    `fire lateness, ms after the scheduled instant (${fires} fires per row, interleaved${options.smoke ? '; smoke run: figures are meaningless' : ''})`,
    ['setup', 'median', 'p90', 'max', 'median vs croner'],
    rows.map(([name, values]) => {
      const sorted = [...values].sort((a, b) => a - b);
      const med = median(sorted);
      return [
        name,
        med.toFixed(2),
        percentile(sorted, 0.9).toFixed(2),
        sorted.at(-1)!.toFixed(2),
        `${med - baseline >= 0 ? '+' : ''}${(med - baseline).toFixed(2)}`,
      ];
    }),
  );
}
