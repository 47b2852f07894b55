/**
 * Runs the benchmarks: `npm run bench [-- --smoke] [filter...]`.
 *
 * Every `test/bench/*.bench.ts` file default-exports `async (options: BenchOptions) => void`.
 * Filters keep only the files whose name contains one of them. `--smoke` runs a few iterations
 * per case, so CI proves each bench still runs in seconds.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchOptions } from './harness.ts';

const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const unknownFlags = args.filter((arg) => arg.startsWith('-') && arg !== '--smoke');
if (unknownFlags.length > 0) {
  console.error(
    `Unknown option(s): ${unknownFlags.join(', ')}. Usage: npm run bench -- [--smoke] [filter...]`,
  );
  process.exit(2);
}
const filters = args.filter((arg) => !arg.startsWith('-'));

const directory = dirname(fileURLToPath(import.meta.url));
const files = readdirSync(directory)
  .filter((file) => file.endsWith('.bench.ts'))
  .filter((file) => filters.length === 0 || filters.some((filter) => file.includes(filter)))
  .sort();

if (files.length === 0) {
  console.error(`No bench file matches ${filters.join(', ') || '*.bench.ts'} in ${directory}`);
  process.exit(2);
}

const options: BenchOptions = { smoke };
console.log(`# resil benchmarks${smoke ? ' (smoke)' : ''}`);
console.log(`Node ${process.version}, ${process.platform}/${process.arch}`);

let failed = 0;
for (const file of files) {
  console.log(`\n## ${file}`);
  const started = performance.now();
  try {
    const module = (await import(pathToFileURL(join(directory, file)).href)) as {
      default?: (options: BenchOptions) => Promise<void>;
    };
    if (typeof module.default !== 'function') {
      throw new Error(`${file} has no default export function (options: BenchOptions) => Promise<void>`);
    }
    await module.default(options);
    console.log(`(${file}: ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  } catch (error) {
    failed++;
    console.error(`\n${file} failed:`, error);
  }
}

// Benches may leave clients or servers behind; the run is over, so exit rather than hang CI.
process.exit(failed > 0 ? 1 : 0);
