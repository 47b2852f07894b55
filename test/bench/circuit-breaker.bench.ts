/**
 * Per-call overhead of a closed circuit breaker on the success path, against a bare `await fn()`,
 * cockatiel 3's circuitBreaker (ConsecutiveBreaker and SamplingBreaker) and opossum 8, measured in
 * the same process. Every breaker is configured like resil's Polly defaults where it can be
 * (10% failures over 30 s, 5 s break).
 *
 * Then a breaker shared through a store (`store` + `key`) against the same breaker without one, on
 * a closed circuit: the shared one counts each outcome for its next background sync and makes no
 * round trip of its own, so the ratio is its whole per-call cost (target: within 1.5x). Measured on
 * MemoryLockStore and on Redis (REDIS_URL, else a private redis-server; skipped when neither is
 * there), whose syncs run every 250 ms during the measurement.
 */
import { ConsecutiveBreaker, circuitBreaker, handleAll, SamplingBreaker } from 'cockatiel';
import { Redis } from 'ioredis';
import CircuitBreaker from 'opossum';
import { MemoryLockStore, ResiliencePipelineBuilder } from '../../src/index.ts';
import { RedisLockStore } from '../../src/stores/redis/index.ts';
import { commandExists } from '../support/processes.ts';
import { type RedisServer, startRedisServer } from '../support/redis.ts';
import { type BenchOptions, compare } from './harness.ts';

export default async function circuitBreakerBench(options: BenchOptions): Promise<void> {
  const work = async () => 42;

  const empty = new ResiliencePipelineBuilder().build();
  const resilRatio = new ResiliencePipelineBuilder().addCircuitBreaker().build();
  const resilConsecutive = new ResiliencePipelineBuilder()
    .addCircuitBreaker({ consecutiveFailures: 5 })
    .build();

  const cockatielConsecutive = circuitBreaker(handleAll, {
    halfOpenAfter: 5_000,
    breaker: new ConsecutiveBreaker(5),
  });
  const cockatielSampling = circuitBreaker(handleAll, {
    halfOpenAfter: 5_000,
    breaker: new SamplingBreaker({ threshold: 0.1, duration: 30_000, minimumRps: 100 / 30 }),
  });

  const opossumShape = {
    errorThresholdPercentage: 10,
    volumeThreshold: 100,
    rollingCountTimeout: 30_000,
    rollingCountBuckets: 10,
    resetTimeout: 5_000,
  };
  // opossum times every call out after 10 s by default (a timer per call); `timeout: false` is the
  // breaker alone, the like-for-like figure.
  const opossum = new CircuitBreaker(work, { ...opossumShape, timeout: false });
  const opossumDefaultTimeout = new CircuitBreaker(work, opossumShape);

  try {
    await compare(
      'closed circuit breaker, overhead per call, success path',
      [
        { name: 'bare await fn()', run: () => work() },
        { name: 'resil empty pipeline', run: () => empty.execute(work) },
        { name: 'resil circuit breaker (failure ratio)', run: () => resilRatio.execute(work) },
        { name: 'resil circuit breaker (consecutive)', run: () => resilConsecutive.execute(work) },
        { name: 'cockatiel SamplingBreaker', run: () => cockatielSampling.execute(work) },
        { name: 'cockatiel ConsecutiveBreaker', run: () => cockatielConsecutive.execute(work) },
        { name: 'opossum (timeout: false)', run: () => opossum.fire() },
        { name: 'opossum (default 10 s timeout)', run: () => opossumDefaultTimeout.fire() },
      ],
      { ...options, baseline: 'bare await fn()' },
    );
  } finally {
    opossum.shutdown();
    opossumDefaultTimeout.shutdown();
  }

  await sharedBreakerBench(options, work);
}

async function sharedBreakerBench(options: BenchOptions, work: () => Promise<number>): Promise<void> {
  const shape = {
    failureRatio: 0.1,
    minimumThroughput: 100,
    samplingDuration: '30s',
    breakDuration: '5s',
  } as const;
  const local = new ResiliencePipelineBuilder().addCircuitBreaker(shape).build();
  const memory = new ResiliencePipelineBuilder()
    .addCircuitBreaker({ ...shape, store: new MemoryLockStore(), key: 'bench' })
    .build();
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  let url = process.env.REDIS_URL;
  if (url === undefined && commandExists('redis-server')) {
    server = await startRedisServer();
    url = server.url;
  }
  try {
    const cases = [
      { name: 'local breaker (no store)', run: () => local.execute(work) },
      { name: 'shared breaker, MemoryLockStore', run: () => memory.execute(work) },
    ];
    if (url !== undefined) {
      client = new Redis(url);
      const store = new RedisLockStore(client, { prefix: `bench-circuit-${process.pid}:` });
      const redis = new ResiliencePipelineBuilder()
        .addCircuitBreaker({ ...shape, store, key: 'bench' })
        .build();
      await redis.execute(work); // the first sync, so that the measurement starts shared
      cases.push({ name: 'shared breaker, RedisLockStore', run: () => redis.execute(work) });
    }
    await compare('closed circuit breaker with a store vs without, per call, success path', cases, {
      ...options,
      baseline: 'local breaker (no store)',
    });
  } finally {
    client?.disconnect();
    await server?.stop();
  }
}
