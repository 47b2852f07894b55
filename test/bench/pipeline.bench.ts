/**
 * Per-call overhead of `pipeline.execute()` on the success path, against a bare `await fn()` and
 * cockatiel's equivalent policies, measured in the same process.
 */
import { handleAll, retry, TimeoutStrategy, timeout, wrap } from 'cockatiel';
import { ResiliencePipelineBuilder } from '../../src/index.ts';
import { type BenchOptions, compare, printTable } from './harness.ts';

export default async function pipelineBench(options: BenchOptions): Promise<void> {
  const work = async () => 42;

  const empty = new ResiliencePipelineBuilder().build();
  const resilRetry = new ResiliencePipelineBuilder().addRetry({ maxRetryAttempts: 3 }).build();
  const resilTimeoutRetry = new ResiliencePipelineBuilder()
    .addTimeout(30_000)
    .addRetry({ maxRetryAttempts: 3 })
    .build();
  const resilRetryTimeout = new ResiliencePipelineBuilder()
    .addRetry({ maxRetryAttempts: 3 })
    .addTimeout(30_000)
    .build();

  const cockatielRetry = retry(handleAll, { maxAttempts: 3 });
  const cockatielRetryTimeout = wrap(
    retry(handleAll, { maxAttempts: 3 }),
    timeout(30_000, TimeoutStrategy.Cooperative),
  );

  const rows = await compare(
    'execute() overhead per call, success path',
    [
      { name: 'bare await fn()', run: () => work() },
      { name: 'resil empty pipeline', run: () => empty.execute(work) },
      { name: 'resil retry', run: () => resilRetry.execute(work) },
      { name: 'resil timeout + retry', run: () => resilTimeoutRetry.execute(work) },
      { name: 'resil retry + timeout', run: () => resilRetryTimeout.execute(work) },
      { name: 'cockatiel retry', run: () => cockatielRetry.execute(work) },
      { name: 'cockatiel wrap(retry, timeout)', run: () => cockatielRetryTimeout.execute(work) },
    ],
    { ...options, baseline: 'bare await fn()' },
  );

  const ns = (name: string) => rows.find((row) => row.name === name)!.nsPerOp;
  const overhead = (name: string) => ns(name) - ns('bare await fn()');
  printTable(
    'resil against cockatiel, same process (higher = resil cheaper)',
    ['comparison', 'resil ns/op', 'cockatiel ns/op', 'cockatiel / resil', 'overhead ratio'],
    [
      ['retry', 'resil retry', 'cockatiel retry'],
      ['timeout + retry', 'resil retry + timeout', 'cockatiel wrap(retry, timeout)'],
    ].map(([label, resil, cockatiel]) => [
      label!,
      ns(resil!),
      ns(cockatiel!),
      `${(ns(cockatiel!) / ns(resil!)).toFixed(1)}x`,
      `${(overhead(cockatiel!) / Math.max(overhead(resil!), 1)).toFixed(1)}x`,
    ]),
  );
}
