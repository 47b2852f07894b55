/**
 * Per-call overhead of the concurrency limiter, the rate limiters and hedging, against a bare
 * `await fn()`, an empty pipeline and, where a peer has the same strategy, cockatiel 3 (its
 * bulkhead is the concurrency limiter's counterpart; it has no rate limiter or hedging). Measured
 * in the same process, interleaved; the ratios are the figures to read.
 */
import { bulkhead } from 'cockatiel';
import { ResiliencePipelineBuilder } from '../../src/index.ts';
import { type BenchOptions, compare } from './harness.ts';

export default async function limitersBench(options: BenchOptions): Promise<void> {
  const work = async () => 42;
  const empty = new ResiliencePipelineBuilder().build();

  // Uncontended: a permit is always free, the common case for a bulkhead sized for peaks.
  const resilConcurrency = new ResiliencePipelineBuilder().addConcurrencyLimiter({ permitLimit: 10 }).build();
  const cockatielBulkhead = bulkhead(10);
  await compare(
    'concurrency limiter, uncontended (permitLimit 10)',
    [
      { name: 'bare await', run: () => work() },
      { name: 'resil empty pipeline', run: () => empty.execute(work) },
      { name: 'resil concurrency limiter', run: () => resilConcurrency.execute(work) },
      { name: 'cockatiel bulkhead', run: () => cockatielBulkhead.execute(work) },
    ],
    { ...options, baseline: 'cockatiel bulkhead' },
  );

  // Contended: 100 executions at once through 10 permits and a queue of 100.
  const resilQueued = new ResiliencePipelineBuilder()
    .addConcurrencyLimiter({ permitLimit: 10, queueLimit: 100 })
    .build();
  const cockatielQueued = bulkhead(10, 100);
  const slowWork = async () => {
    await null;
    await null;
    return 42;
  };
  const hundred = Array.from({ length: 100 });
  await compare(
    'concurrency limiter, 100 at once through 10 permits + queue (per batch of 100)',
    [
      { name: 'unlimited Promise.all', run: () => Promise.all(hundred.map(() => slowWork())) },
      {
        name: 'resil concurrency limiter',
        run: () => Promise.all(hundred.map(() => resilQueued.execute(slowWork))),
      },
      {
        name: 'cockatiel bulkhead',
        run: () => Promise.all(hundred.map(() => cockatielQueued.execute(slowWork))),
      },
    ],
    { ...options, baseline: 'cockatiel bulkhead' },
  );

  // Rate limiters with room to spare: the cost of counting a permit.
  const tokenBucket = new ResiliencePipelineBuilder()
    .addRateLimiter({ tokenLimit: Number.MAX_SAFE_INTEGER, replenishmentPeriod: '1h' })
    .build();
  const slidingWindow = new ResiliencePipelineBuilder()
    .addRateLimiter({ permitLimit: Number.MAX_SAFE_INTEGER, window: '1s', segmentsPerWindow: 10 })
    .build();
  await compare(
    'rate limiter, permits available',
    [
      { name: 'bare await', run: () => work() },
      { name: 'resil empty pipeline', run: () => empty.execute(work) },
      { name: 'resil token bucket', run: () => tokenBucket.execute(work) },
      { name: 'resil sliding window', run: () => slidingWindow.execute(work) },
    ],
    { ...options, baseline: 'resil empty pipeline' },
  );

  // Hedging when the primary attempt answers before the delay: the price of being ready to hedge
  // (a derived context and signal, one timer set and cleared per call).
  const hedging = new ResiliencePipelineBuilder().addHedging({ delay: '1s' }).build();
  const parallel = new ResiliencePipelineBuilder().addHedging({ delay: 0, maxHedgedAttempts: 1 }).build();
  await compare(
    'hedging, fast primary attempt',
    [
      { name: 'bare await', run: () => work() },
      { name: 'resil empty pipeline', run: () => empty.execute(work) },
      { name: 'resil hedging (delay 1 s)', run: () => hedging.execute(work) },
      { name: 'resil hedging, parallel (2 attempts)', run: () => parallel.execute(work) },
    ],
    { ...options, baseline: 'resil empty pipeline' },
  );
}
