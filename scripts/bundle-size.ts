/**
 * Browser bundle sizes: `npm run size` prints a markdown table of resil's entry points next to
 * cockatiel's equivalents, each bundled the same way (esbuild, platform browser, ESM, minified,
 * tree-shaken) and gzipped with node:zlib. test/bundle/size.test.ts runs the same measurement and
 * holds resil to its budgets.
 */
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const resil = `${root}src/index.ts`;

export interface BundleEntry {
  name: string;
  /** The entry module's source: re-exports what a user would import. */
  source: string;
}

export interface BundleSize {
  name: string;
  minifiedBytes: number;
  gzippedBytes: number;
  /** The bundled code. */
  code: string;
  /** Source files whose code ended up in the bundle (after tree shaking), relative to the repository. */
  inputs: string[];
}

export const resilEntries = {
  retry: {
    name: 'resil: PipelineBuilder + retryStrategy',
    source: `export { PipelineBuilder, retryStrategy } from '${resil}';`,
  },
  retryTimeout: {
    name: 'resil: PipelineBuilder + retryStrategy + timeoutStrategy',
    source: `export { PipelineBuilder, retryStrategy, timeoutStrategy } from '${resil}';`,
  },
  full: {
    name: 'resil: ResiliencePipelineBuilder (every strategy)',
    source: `export { ResiliencePipelineBuilder } from '${resil}';`,
  },
} satisfies Record<string, BundleEntry>;

/** resil/opentelemetry with the `@opentelemetry/api` it imports: what a pipeline with telemetry adds. */
export const openTelemetryEntry = {
  name: 'resil/opentelemetry: openTelemetry (with @opentelemetry/api)',
  source: `export { openTelemetry } from '${root}src/opentelemetry/index.ts';`,
} satisfies BundleEntry;

export const cockatielEntries = {
  retry: { name: 'cockatiel 3: retry + handleAll', source: `export { retry, handleAll } from 'cockatiel';` },
  retryTimeout: {
    name: 'cockatiel 3: wrap(retry, timeout)',
    source: `export { retry, handleAll, timeout, TimeoutStrategy, wrap } from 'cockatiel';`,
  },
  full: { name: 'cockatiel 3: everything', source: `export * from 'cockatiel';` },
} satisfies Record<string, BundleEntry>;

/** Bundles `entry` for the browser and measures it. */
export async function measure(entry: BundleEntry): Promise<BundleSize> {
  const result = await build({
    stdin: { contents: entry.source, resolveDir: root, loader: 'ts', sourcefile: 'entry.ts' },
    bundle: true,
    write: false,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    minify: true,
    treeShaking: true,
    metafile: true,
    logLevel: 'silent',
  });
  const code = result.outputFiles[0]!.text;
  return {
    name: entry.name,
    minifiedBytes: Buffer.byteLength(code),
    gzippedBytes: gzipSync(code, { level: 9 }).length,
    code,
    inputs: Object.entries(Object.values(result.metafile.outputs)[0]!.inputs)
      .filter(([, input]) => input.bytesInOutput > 0)
      .map(([path]) => path),
  };
}

/** `1234` -> `1.21 kB` (1 kB = 1024 bytes, as bundlephobia counts). */
export function formatBytes(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(2)} kB`;
}

async function main(): Promise<void> {
  const rows: string[] = [];
  for (const key of ['retry', 'retryTimeout', 'full'] as const) {
    for (const entry of [resilEntries[key], cockatielEntries[key]]) {
      const size = await measure(entry);
      rows.push(`| ${size.name} | ${formatBytes(size.minifiedBytes)} | ${formatBytes(size.gzippedBytes)} |`);
    }
  }
  const integration = await measure(openTelemetryEntry);
  rows.push(
    `| ${integration.name} | ${formatBytes(integration.minifiedBytes)} | ${formatBytes(integration.gzippedBytes)} |`,
  );
  console.log('| bundle (esbuild, browser, ESM, minified) | minified | gzipped |');
  console.log('|---|---:|---:|');
  for (const row of rows) console.log(row);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
