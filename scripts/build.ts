/**
 * Builds dist/: `npm run build` (also `prepare` and `prepack`).
 *
 * The JavaScript is bundled by esbuild, one file per entry point of package.json's `exports` plus
 * the CLI (`dist/cli/main.js`, which bin/resil.js imports), with the code they share split into
 * `dist/chunks/` so every entry point uses the same module instances. Node loads a few dozen
 * files instead of about 150, which is most of what a CLI command spends on start-up beyond Node
 * itself (`npm run bench -- cli-cold-start`). Packages stay imports (`packages: 'external'`).
 * Each file has a source map with its sources inside. tsc writes the declarations (`.d.ts`),
 * one per source file, beside them.
 *
 * A build replaces each file by a rename (tests that find dist/ stale rebuild it while others run
 * the binary), then removes the JavaScript and maps that the new build no longer has.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));

/** `./dist/stores/redis/index.js` -> `src/stores/redis/index.ts`, for each entry of `exports`. */
export function entryPoints(manifest: { exports: Record<string, unknown> }): string[] {
  const sources = new Set<string>(['src/cli/main.ts']);
  for (const target of Object.values(manifest.exports)) {
    const file = typeof target === 'string' ? target : (target as { default?: string }).default;
    if (file === undefined || !file.startsWith('./dist/') || !file.endsWith('.js')) continue;
    sources.add(`src/${file.slice('./dist/'.length, -'.js'.length)}.ts`);
  }
  return [...sources];
}

export async function buildDist(): Promise<void> {
  const manifest = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
    exports: Record<string, unknown>;
  };
  const dist = join(root, 'dist');
  const result = await build({
    absWorkingDir: root,
    entryPoints: entryPoints(manifest),
    outdir: 'dist',
    outbase: 'src',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    chunkNames: 'chunks/[name]-[hash]',
    sourcemap: 'linked',
    sourcesContent: true,
    logLevel: 'warning',
    write: false,
  });
  const written = new Set<string>();
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
    written.add(file.path);
  }
  for (const entry of readdirSync(dist, { recursive: true }) as string[]) {
    const path = join(dist, entry);
    if (/\.js(?:\.map)?$/.test(entry) && !written.has(path)) rmSync(path, { force: true });
  }
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildDist();
