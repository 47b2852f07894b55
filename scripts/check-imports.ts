/**
 * The import direction check of `npm run lint`: `cli -> config -> scheduler -> library ->
 * strategies -> pipeline`, and nothing imports upward. Every import of every `src/**\/*.ts`
 * counts: `import`, `import type`, `export ... from`, a side-effect `import '...'`, `import()` and
 * `typeof import()`.
 *
 * `node --import tsx scripts/check-imports.ts [root]` prints each back-arrow and exits 1 when there
 * is one; the known ones in `allowedBackArrows` are printed as such and let pass, and an entry there
 * that no import needs any more fails the check too (remove it with its arrow).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type TypeScript from 'typescript';

// required, not imported: tsx would transform the 9 MB compiler on every run.
const ts = createRequire(import.meta.url)('typescript') as typeof TypeScript;

/** Top to bottom: a file may import its own layer and the layers below it. */
export const layers: ReadonlyArray<{ name: string; paths: readonly string[] }> = [
  { name: 'cli', paths: ['src/cli/'] },
  // The public surface re-exports the job model (defineConfig) and the library.
  { name: 'entry points', paths: ['src/index.ts'] },
  { name: 'config', paths: ['src/config/'] },
  // Integrations with other libraries (resil/opentelemetry): built on the scheduler's events and the pipeline's telemetry.
  { name: 'integrations', paths: ['src/opentelemetry/'] },
  { name: 'scheduler', paths: ['src/scheduler/'] },
  // ResiliencePipelineBuilder (every strategy's shortcut), the run ledger (its contract, decisions
  // and memory store), the stores and the test kit: built on the strategies, which know none of them.
  { name: 'library', paths: ['src/builder/', 'src/ledger/', 'src/stores/', 'src/testing/'] },
  { name: 'strategies', paths: ['src/strategies/'] },
  // What every strategy builds on; it knows none of them.
  { name: 'pipeline', paths: ['src/pipeline/'] },
];

export interface BackArrow {
  /** Repository-relative paths, `/`-separated. */
  readonly from: string;
  readonly to: string;
  readonly specifier: string;
  readonly line: number;
}

/** A known back-arrow let pass: the importing files (a path, or a folder ending in `/`) and the one file they import. */
export interface AllowedBackArrow {
  readonly from: string;
  readonly to: string;
  /** Who removes it, and when. */
  readonly why: string;
}

/**
 * Back-arrows that exist and have an owner. Empty since the job model moved from src/config into
 * src/scheduler (issue 10); an entry looked like
 * `{ from: 'src/scheduler/', to: 'src/config/types.ts', why: 'the job model moves to src/scheduler (issue 10)' }`.
 */
export const allowedBackArrows: readonly AllowedBackArrow[] = [];

function layerOf(path: string): number | undefined {
  const index = layers.findIndex((layer) =>
    layer.paths.some((prefix) => (prefix.endsWith('/') ? path.startsWith(prefix) : path === prefix)),
  );
  return index === -1 ? undefined : index;
}

function allows(allowed: AllowedBackArrow, arrow: BackArrow): boolean {
  return (
    allowed.to === arrow.to &&
    (allowed.from.endsWith('/') ? arrow.from.startsWith(allowed.from) : allowed.from === arrow.from)
  );
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

export interface ImportCheck {
  /** Back-arrows no entry allows. */
  readonly violations: BackArrow[];
  /** Back-arrows an entry allows. */
  readonly allowed: BackArrow[];
  /** Entries that allow no back-arrow any more. */
  readonly stale: AllowedBackArrow[];
}

/** Every import of `root/src` that points up the layers, split by whether `allowList` lets it pass. */
export function checkImports(
  root: string,
  allowList: readonly AllowedBackArrow[] = allowedBackArrows,
): ImportCheck {
  const violations: BackArrow[] = [];
  const allowed: BackArrow[] = [];
  const toRepoPath = (path: string) => relative(root, path).split(sep).join('/');
  for (const file of sourceFiles(join(root, 'src'))) {
    const from = toRepoPath(file);
    const fromLayer = layerOf(from);
    if (fromLayer === undefined) continue;
    const text = readFileSync(file, 'utf8');
    for (const imported of ts.preProcessFile(text, true, true).importedFiles) {
      if (!imported.fileName.startsWith('.')) continue; // a package
      const to = toRepoPath(resolve(dirname(file), imported.fileName));
      const toLayer = layerOf(to);
      if (toLayer === undefined || toLayer >= fromLayer) continue;
      const line = text.slice(0, imported.pos).split('\n').length;
      const arrow: BackArrow = { from, to, specifier: imported.fileName, line };
      (allowList.some((entry) => allows(entry, arrow)) ? allowed : violations).push(arrow);
    }
  }
  const stale = allowList.filter((entry) => !allowed.some((arrow) => allows(entry, arrow)));
  return { violations, allowed, stale };
}

function describe(arrow: BackArrow): string {
  const name = (path: string) => layers[layerOf(path)!]!.name;
  return `${arrow.from}:${arrow.line} (${name(arrow.from)}) imports ${arrow.to} (${name(arrow.to)})`;
}

function main(): void {
  const root = resolve(process.argv[2] ?? fileURLToPath(new URL('..', import.meta.url)));
  const { violations, allowed, stale } = checkImports(root);
  const order = layers.map((layer) => layer.name).join(' -> ');
  for (const arrow of allowed) console.log(`known back-arrow (allowed): ${describe(arrow)}`);
  for (const arrow of violations) console.error(`import against the layers: ${describe(arrow)}`);
  for (const entry of stale) {
    console.error(`allowedBackArrows entry no import needs: ${entry.from} -> ${entry.to}; remove it`);
  }
  if (violations.length > 0 || stale.length > 0) {
    if (violations.length > 0)
      console.error(`\n${violations.length} import(s) point up the layers ${order}.`);
    process.exitCode = 1;
  } else {
    console.log(`imports follow ${order} (${allowed.length} known back-arrow(s) allowed)`);
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
