/**
 * A small benchmark harness shared by every `test/bench/*.bench.ts` file.
 *
 * `compare()` measures several cases in the same process, interleaved round by round so that drift
 * (CPU frequency, another process on the machine, GC) hits every case alike, and reports each case's
 * median time per call and its ratio to a baseline case as a markdown table.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface BenchOptions {
  /** Only a few iterations per case: proves the bench runs (CI), measures nothing. */
  smoke: boolean;
}

export interface BenchCase {
  name: string;
  run: () => unknown | Promise<unknown>;
}

export interface CompareOptions extends BenchOptions {
  /** Name of the case the ratios are computed against. Defaults to the first case. */
  baseline?: string;
  /** Measuring time per case, in ms. Defaults to `BENCH_TIME_MS` or 1000. */
  timeMs?: number;
}

export interface BenchRow {
  name: string;
  /** Median nanoseconds per call over the measured rounds. */
  nsPerOp: number;
  opsPerSec: number;
  /** nsPerOp / baseline's nsPerOp (1 for the baseline itself). */
  ratio: number;
  /** Calls measured in total. */
  iterations: number;
}

const smokeIterations = 5;
const roundTargetMs = 20;

// A full GC between cases keeps one case's garbage from being collected on another's clock.
const collectGarbage: () => void = (() => {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (() => void) | undefined;
    if (typeof gc === 'function') return gc;
  } catch {
    // Flags are locked in some embedders; measuring still works, just with more noise.
  }
  return () => {};
})();

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

type Loop = (iterations: number) => Promise<number>;

/** Builds a timed loop; sync cases are not awaited per call, so their figure is not the cost of an await. */
async function makeLoop(run: BenchCase['run']): Promise<Loop> {
  const first = run();
  if (isThenable(first)) {
    await first;
    return async (iterations) => {
      const start = process.hrtime.bigint();
      for (let i = 0; i < iterations; i++) await run();
      return Number(process.hrtime.bigint() - start);
    };
  }
  let sink: unknown = first;
  return async (iterations) => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) sink = run();
    const elapsed = Number(process.hrtime.bigint() - start);
    if (sink === loopSentinel) console.log('unreachable');
    return elapsed;
  };
}
const loopSentinel = Symbol('sink');

/** Finds a batch size that takes about `roundTargetMs`, warming the case up on the way. */
async function calibrate(loop: Loop): Promise<number> {
  let iterations = 1;
  for (;;) {
    const elapsedNs = await loop(iterations);
    if (elapsedNs >= roundTargetMs * 1e6 || iterations >= 1 << 24) {
      return Math.max(1, Math.round((iterations * roundTargetMs * 1e6) / Math.max(elapsedNs, 1)));
    }
    iterations *= elapsedNs < 1e6 ? 8 : 2;
  }
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * Measures every case and prints a markdown table (case, ns/op, ops/s, ratio vs baseline).
 *
 * @example
 * await compare('retry', [
 *   { name: 'bare await', run: () => fn() },
 *   { name: 'resil retry', run: () => pipeline.execute(fn) },
 * ], { ...options, baseline: 'bare await' });
 */
export async function compare(
  title: string,
  cases: BenchCase[],
  options: CompareOptions,
): Promise<BenchRow[]> {
  if (cases.length === 0) throw new Error(`compare('${title}'): no cases`);
  const baselineName = options.baseline ?? cases[0]!.name;
  if (!cases.some((c) => c.name === baselineName)) {
    throw new Error(`compare('${title}'): baseline '${baselineName}' is not one of the cases`);
  }
  const loops: Loop[] = [];
  for (const c of cases) loops.push(await makeLoop(c.run));

  const samples: number[][] = cases.map(() => []);
  const iterationsDone: number[] = cases.map(() => 0);

  if (options.smoke) {
    for (let i = 0; i < cases.length; i++) {
      samples[i]!.push((await loops[i]!(smokeIterations)) / smokeIterations);
      iterationsDone[i] = smokeIterations;
    }
  } else {
    const timeMs = options.timeMs ?? (Number(process.env.BENCH_TIME_MS) || 1000);
    const batch: number[] = [];
    for (const loop of loops) {
      batch.push(await calibrate(loop));
      await calibrate(loop); // second pass: the optimizing compiler has settled by now
    }
    // Odd, so the median is one round's figure.
    const rounds = Math.max(5, Math.round(timeMs / roundTargetMs)) | 1;
    for (let round = 0; round < rounds; round++) {
      // Every other round runs the cases in reverse, so no case always runs right after another.
      for (let step = 0; step < cases.length; step++) {
        const i = round % 2 === 0 ? step : cases.length - 1 - step;
        const size = batch[i]!;
        samples[i]!.push((await loops[i]!(size)) / size);
        iterationsDone[i]! += size;
      }
      if (round % 10 === 9) collectGarbage();
    }
  }

  const nsPerOp = samples.map(median);
  const baselineNs = nsPerOp[cases.findIndex((c) => c.name === baselineName)]!;
  const rows: BenchRow[] = cases.map((c, i) => ({
    name: c.name,
    nsPerOp: nsPerOp[i]!,
    opsPerSec: 1e9 / nsPerOp[i]!,
    ratio: nsPerOp[i]! / baselineNs,
    iterations: iterationsDone[i]!,
  }));
  printTable(
    options.smoke ? `${title} (smoke run: figures are meaningless)` : title,
    ['case', 'ns/op', 'ops/s', `vs ${baselineName}`],
    rows.map((row) => [
      row.name,
      formatNumber(row.nsPerOp),
      formatNumber(row.opsPerSec),
      `${row.ratio.toFixed(2)}x`,
    ]),
  );
  return rows;
}

/** Formats a figure for a table: thousands separated, at most one decimal below 100. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const digits = Math.abs(value) < 100 ? 1 : 0;
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Prints a markdown table under a `### title` heading; numbers right-aligned. */
export function printTable(title: string, headers: string[], rows: Array<Array<string | number>>): void {
  const cells = rows.map((row) => row.map((cell) => (typeof cell === 'number' ? formatNumber(cell) : cell)));
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...cells.map((row) => (row[column] ?? '').length)),
  );
  const numeric = headers.map((_, column) =>
    cells.every((row) => /^[-\d.,]+x?$/.test(row[column] ?? '') || (row[column] ?? '') === ''),
  );
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => (numeric[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join(' | ')} |`;
  const rule = `|${widths.map((width, column) => (numeric[column] ? `${'-'.repeat(width + 1)}:` : '-'.repeat(width + 2))).join('|')}|`;
  console.log(`\n### ${title}\n`);
  console.log(line(headers));
  console.log(rule);
  for (const row of cells) console.log(line(row));
  console.log('');
}
