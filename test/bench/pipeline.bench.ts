/**
 * Per-call overhead of `pipeline.execute()` on the success path, against a bare `await fn()` and
 * cockatiel's equivalent policies, measured in the same process; then what executions leave
 * behind in the host: the cost of a bare `await` in a process that never imported resil, after
 * executions without a lock, and after one with a lock (whose ambient context turns on promise
 * hooks on Node 20). Last, the figures of issue 14 as ratios.
 *
 * Every measurement runs in fresh processes of its own: a bench before this one in the same run
 * (a lock) may already have turned on promise hooks in this one, which slows every promise,
 * cockatiel's as well. The bare `await` processes run one after another, interleaved, and each
 * figure is the best of its rounds and processes: load on the machine only ever adds time.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { handleAll, retry, TimeoutStrategy, timeout, wrap } from 'cockatiel';
import { type BenchOptions, compare, formatNumber, printTable } from './harness.ts';

const thisFile = fileURLToPath(import.meta.url);
const figuresPrefix = 'pipeline-bench-figures ';

type FloorMode =
  | 'never imported resil'
  | 'after retry + timeout executions'
  | 'after one execution with a lock';
const floorModes: readonly FloorMode[] = [
  'never imported resil',
  'after retry + timeout executions',
  'after one execution with a lock',
];

/** Runs this file in a fresh process with `args`; prints its output but for the figures line, which it returns parsed. */
function runChild(args: string[], options: BenchOptions): Record<string, number> {
  const child = spawnSync(
    process.execPath,
    ['--import', 'tsx', thisFile, ...args, ...(options.smoke ? ['--smoke'] : [])],
    {
      encoding: 'utf8',
      env: process.env,
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  if (child.status !== 0) {
    throw new Error(
      `pipeline bench process (${args.join(' ')}) exited with ${child.status ?? child.signal}: ${child.stderr}`,
    );
  }
  let figures: Record<string, number> = {};
  for (const line of child.stdout.split('\n')) {
    if (line.startsWith(figuresPrefix)) figures = JSON.parse(line.slice(figuresPrefix.length));
    else if (args[0] === 'compare') console.log(line);
  }
  return figures;
}

export default async function pipelineBench(options: BenchOptions): Promise<void> {
  const ns = runChild(['compare'], options);

  const rounds = options.smoke ? 1 : 5;
  const floor = new Map<FloorMode, number>();
  for (let round = 0; round < rounds; round++) {
    for (const mode of floorModes) {
      const { best } = runChild(['await-floor', mode], options);
      floor.set(mode, Math.min(floor.get(mode) ?? Infinity, best!));
    }
  }
  const floorNs = floor.get('never imported resil')!;
  printTable(
    `bare await fn() in fresh processes, best of ${rounds} each, interleaved${options.smoke ? ' (smoke run: figures are meaningless)' : ''}`,
    ['process', 'ns/op', 'vs never imported resil'],
    floorModes.map((mode) => [
      mode,
      formatNumber(floor.get(mode)!),
      `${(floor.get(mode)! / floorNs).toFixed(2)}x`,
    ]),
  );

  const at = (name: string) => ns[name]!;
  const afterNoLock = floor.get('after retry + timeout executions')!;
  const afterLock = floor.get('after one execution with a lock')!;
  printTable(
    'the figures of issue 14, one run',
    ['measure', 'resil', 'peer / floor', 'ratio', 'target'],
    [
      [
        'retry + timeout, success path',
        formatNs(at('resil retry + timeout')),
        `cockatiel wrap(retry, timeout) ${formatNs(at('cockatiel wrap(retry, timeout)'))}`,
        `${(at('cockatiel wrap(retry, timeout)') / at('resil retry + timeout')).toFixed(1)}x cheaper`,
        '>= 20x cheaper',
      ],
      [
        'retry alone',
        formatNs(at('resil retry')),
        `cockatiel retry ${formatNs(at('cockatiel retry'))}`,
        `${(at('resil retry') / at('cockatiel retry')).toFixed(2)}x cockatiel's`,
        '<= 1.0x',
      ],
      [
        'bare await after retry + timeout executions',
        formatNs(afterNoLock),
        `never imported resil ${formatNs(floorNs)}`,
        `${(afterNoLock / floorNs).toFixed(2)}x`,
        'unchanged (1.0x)',
      ],
      [
        'bare await after one execution with a lock',
        formatNs(afterLock),
        `never imported resil ${formatNs(floorNs)}`,
        `${(afterLock / floorNs).toFixed(2)}x`,
        'the ambient context, documented',
      ],
    ],
  );
}

/** The interleaved comparison of resil and cockatiel; prints its tables and the figures line. */
async function compareInThisProcess(options: BenchOptions): Promise<void> {
  const { ResiliencePipelineBuilder } = await import('../../src/index.ts');
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
  console.log(figuresPrefix + JSON.stringify(Object.fromEntries(rows.map((row) => [row.name, row.nsPerOp]))));
}

/** Prints the best ns per bare `await` over 15 rounds, after what `mode` says ran first. */
async function awaitFloorInThisProcess(mode: FloorMode, options: BenchOptions): Promise<void> {
  const work = async () => 42;
  if (mode !== 'never imported resil') {
    const { MemoryLockStore, ResiliencePipelineBuilder } = await import('../../src/index.ts');
    const builder = new ResiliencePipelineBuilder().addRetry({ maxRetryAttempts: 3 }).addTimeout(30_000);
    const pipeline = (
      mode === 'after one execution with a lock'
        ? builder.addLock({ key: () => 'bench', store: new MemoryLockStore() })
        : builder
    ).build();
    for (let i = 0; i < (mode === 'after one execution with a lock' ? 1 : 1_000); i++) {
      await pipeline.execute(work);
    }
  }
  const iterations = options.smoke ? 1_000 : 200_000;
  let best = Infinity;
  for (let round = 0; round < (options.smoke ? 1 : 15); round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) await work();
    best = Math.min(best, Number(process.hrtime.bigint() - started) / iterations);
  }
  console.log(figuresPrefix + JSON.stringify({ best }));
}

function formatNs(value: number): string {
  return `${formatNumber(value)} ns`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [command, mode] = process.argv.slice(2);
  const options: BenchOptions = { smoke: process.argv.includes('--smoke') };
  if (command === 'compare') await compareInThisProcess(options);
  else if (command === 'await-floor' && floorModes.includes(mode as FloorMode)) {
    await awaitFloorInThisProcess(mode as FloorMode, options);
  } else {
    throw new Error(`Usage: ${thisFile} compare | await-floor '<${floorModes.join("' | '")}>' [--smoke]`);
  }
}
