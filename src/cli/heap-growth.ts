import { setFlagsFromString } from 'node:v8';

/**
 * How much V8 lets the heap grow past what its last full collection kept before it collects
 * again, for `resil run`: 50 %. V8's own default grows it by up to 4 times under a high
 * allocation rate, which a burst of fires is (10,000 fires allocate about 600 MB in a few seconds,
 * almost all of it short-lived): the heap then reached 160 MB for 45 MB of live objects. At 50 %
 * the peak RSS of an instance in that burst fell from 227-236 MB to 170-174 MB, with the same
 * start lateness (`npm run bench -- burst`, docs/benchmarks.md).
 */
export const runnerHeapGrowingPercent = 50;

/** The V8 flag `resil run` sets, or `undefined` when node was started with one of its own. */
export function heapGrowthFlag(execArgv: readonly string[]): string | undefined {
  const given = execArgv.some((argument) => /^--heap[-_]growing[-_]percent(=|$)/.test(argument));
  return given ? undefined : `--heap-growing-percent=${runnerHeapGrowingPercent}`;
}

/** Sets {@link heapGrowthFlag} in this process (a flag V8 reads each time it sizes the heap). */
export function boundHeapGrowth(execArgv: readonly string[] = process.execArgv): void {
  const flag = heapGrowthFlag(execArgv);
  if (flag !== undefined) setFlagsFromString(flag);
}
