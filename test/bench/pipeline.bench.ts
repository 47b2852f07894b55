/**
 * Per-call overhead of `pipeline.execute()` on the success path, against a bare `await fn()` and
 * cockatiel's equivalent policies, measured in the same process; then what the executions left
 * behind in the host: the cost of a bare `await` before any execution, after the executions
 * without a lock, and after one with a lock (whose ambient context turns on promise hooks on Node 20).
 *
 * Runs in a fresh process of its own: a bench before it in the same run (a lock) may already have
 * turned on promise hooks in this one, which slows every promise, cockatiel's as well.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { handleAll, retry, TimeoutStrategy, timeout, wrap } from 'cockatiel';
import { MemoryLockStore, ResiliencePipelineBuilder } from '../../src/index.ts';
import { type BenchOptions, compare, printTable } from './harness.ts';

const thisFile = fileURLToPath(import.meta.url);

export default async function pipelineBench(options: BenchOptions): Promise<void> {
  const child = spawnSync(
    process.execPath,
    ['--import', 'tsx', thisFile, ...(options.smoke ? ['--smoke'] : [])],
    { stdio: 'inherit', env: process.env },
  );
  if (child.status !== 0) {
    throw new Error(`the pipeline bench process exited with ${child.status ?? child.signal}`);
  }
}

async function measureInThisProcess(options: BenchOptions): Promise<void> {
  const work = async () => 42;

  // Nothing of resil has run yet: the floor of a bare await in this process.
  const [before] = await compare(
    'bare await fn(), before any execution',
    [{ name: 'bare await fn()', run: () => work() }],
    options,
  );

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

  // Alone, as before: inside the comparison above it would also pay for cockatiel's garbage.
  const [after] = await compare(
    'bare await fn(), after the executions above (no lock)',
    [{ name: 'bare await fn()', run: () => work() }],
    options,
  );

  // Last, since it cannot be undone: one locked execution enters the ambient context.
  const locked = new ResiliencePipelineBuilder()
    .addLock({ key: () => 'bench', store: new MemoryLockStore() })
    .build();
  await locked.execute(work);
  const [afterLock] = await compare(
    'bare await fn(), after one execution with a lock',
    [{ name: 'bare await fn()', run: () => work() }],
    options,
  );

  printTable(
    'the figures of issue 14, one run (ratio: see each row)',
    ['measure', 'resil', 'peer / floor', 'ratio', 'target'],
    [
      [
        'retry + timeout, success path',
        `${formatNs(ns('resil retry + timeout'))}`,
        `cockatiel wrap(retry, timeout) ${formatNs(ns('cockatiel wrap(retry, timeout)'))}`,
        `${(ns('cockatiel wrap(retry, timeout)') / ns('resil retry + timeout')).toFixed(1)}x cheaper`,
        '>= 20x cheaper',
      ],
      [
        'retry alone',
        `${formatNs(ns('resil retry'))}`,
        `cockatiel retry ${formatNs(ns('cockatiel retry'))}`,
        `${(ns('resil retry') / ns('cockatiel retry')).toFixed(2)}x cockatiel's`,
        '<= 1.0x',
      ],
      [
        'bare await, after the executions above (no lock)',
        `${formatNs(after!.nsPerOp)}`,
        `before any execution ${formatNs(before!.nsPerOp)}`,
        `${(after!.nsPerOp / before!.nsPerOp).toFixed(2)}x`,
        'unchanged (1.0x)',
      ],
      [
        'bare await, after one execution with a lock',
        `${formatNs(afterLock!.nsPerOp)}`,
        `before any execution ${formatNs(before!.nsPerOp)}`,
        `${(afterLock!.nsPerOp / before!.nsPerOp).toFixed(2)}x`,
        'the ambient context (documented)',
      ],
    ],
  );
}

function formatNs(value: number): string {
  return `${value < 100 ? value.toFixed(1) : Math.round(value).toLocaleString('en-US')} ns`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await measureInThisProcess({ smoke: process.argv.includes('--smoke') });
}
