/**
 * The fleet-wide rate limiter's cost per call against Redis: a pipeline with
 * `addRateLimiter({ tokenLimit, store: RedisLockStore, key })` (permits always available, so every
 * call is one script and a granted execution), next to the floor, one `INCR` per call through the
 * same ioredis connection, and the script alone (`EVALSHA`, what the limiter sends). Sequential calls
 * (one round trip each: latency) and 16 at once (pipelined on the connection: throughput), in the
 * same process, interleaved; the ratio to `INCR` is the figure to read.
 *
 * Uses REDIS_URL when set, else starts a private redis-server. `npm run bench -- shared-rate-limit`.
 */
import { Redis } from 'ioredis';
import { ResiliencePipelineBuilder } from '../../src/index.ts';
import { RedisLockStore } from '../../src/stores/redis/index.ts';
import { rateLimitKey, rateLimitScript } from '../../src/stores/redis/shared-rate-limit.ts';
import { deleteKeys, startRedisServer } from '../support/redis.ts';
import { type BenchOptions, compare } from './harness.ts';

export default async function sharedRateLimitBench(options: BenchOptions): Promise<void> {
  const server = process.env.REDIS_URL ? undefined : await startRedisServer();
  const client = new Redis(process.env.REDIS_URL ?? server!.url);
  const prefix = `bench-rate-limit-${process.pid}:`;
  try {
    const store = new RedisLockStore(client, { prefix });
    const limited = new ResiliencePipelineBuilder()
      .addRateLimiter({ tokenLimit: 1_000_000_000, replenishmentPeriod: '1s', store, key: 'shared' })
      .build();
    const local = new ResiliencePipelineBuilder()
      .addRateLimiter({ tokenLimit: 1_000_000_000, replenishmentPeriod: '1s' })
      .build();
    const work = async () => 42;
    const counter = `${prefix}counter`;
    const scriptKey = rateLimitKey(prefix, 'raw');
    // 1 µs between permits, bursts of a billion: always granted, as in the limiter case.
    const evalsha = () => client.evalsha(rateLimitScript.sha, 1, scriptKey, 1, 999_999_999);
    await client.eval(rateLimitScript.lua, 1, scriptKey, 1, 999_999_999);

    await compare(
      'shared rate limiter on Redis, sequential calls (one round trip each)',
      [
        { name: 'INCR (ioredis)', run: () => client.incr(counter) },
        { name: 'rate limit script alone (EVALSHA)', run: evalsha },
        { name: 'resil shared rate limiter (Redis)', run: () => limited.execute(work) },
        { name: 'resil local rate limiter (no store)', run: () => local.execute(work) },
      ],
      { ...options, baseline: 'INCR (ioredis)' },
    );

    const sixteen = Array.from({ length: 16 });
    await compare(
      'shared rate limiter on Redis, 16 calls at once (per batch of 16)',
      [
        { name: '16 x INCR (ioredis)', run: () => Promise.all(sixteen.map(() => client.incr(counter))) },
        { name: '16 x rate limit script (EVALSHA)', run: () => Promise.all(sixteen.map(evalsha)) },
        {
          name: '16 x resil shared rate limiter (Redis)',
          run: () => Promise.all(sixteen.map(() => limited.execute(work))),
        },
      ],
      { ...options, baseline: '16 x INCR (ioredis)' },
    );
  } finally {
    await deleteKeys(client, prefix);
    client.disconnect();
    await server?.stop();
  }
}
