/**
 * Uncontended lock overhead per call: acquire + run + release on a MemoryLockStore, against a bare
 * `await fn()` and async-mutex's `runExclusive` (an in-process mutex without leases or tokens),
 * measured in the same process.
 */
import { Mutex } from 'async-mutex';
import { MemoryLockStore, ResiliencePipelineBuilder } from '../../src/index.ts';
import { type BenchOptions, compare } from './harness.ts';

export default async function lockBench(options: BenchOptions): Promise<void> {
  const work = async () => 42;

  const mutex = new Mutex();
  const store = new MemoryLockStore();
  const lock = new ResiliencePipelineBuilder().addLock({ key: () => 'bench', store }).build();
  const lockPerOperation = new ResiliencePipelineBuilder()
    .addLock({ key: (context) => `order:${context.operationKey}`, store })
    .build();
  const operations = Array.from({ length: 1_000 }, (_, index) => ({ operationKey: String(index) }));
  let next = 0;

  await compare(
    'uncontended acquire + run + release, per call',
    [
      { name: 'bare await fn()', run: () => work() },
      { name: 'async-mutex runExclusive', run: () => mutex.runExclusive(work) },
      { name: 'resil lock, MemoryLockStore', run: () => lock.execute(work) },
      {
        name: 'resil lock, 1 000 keys',
        run: () => lockPerOperation.execute(work, operations[next++ % operations.length]),
      },
    ],
    { ...options, baseline: 'bare await fn()' },
  );
}
