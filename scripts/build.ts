/**
 * Builds dist/: `npm run build` (also `prepare` and `prepack`).
 *
 * The JavaScript is bundled by rolldown, one file per entry point of package.json's `exports` plus
 * the CLI (`dist/cli/main.js`, which bin/resil.js imports), with the code they share in
 * `dist/chunks/` so every entry point uses the same module instances. What a CLI command spends on
 * start-up beyond Node itself is mostly the number of files Node loads (each ES module costs about
 * 0.2-0.4 ms to find, read, compile and link, whatever its size), so the shared code is grouped
 * into a few chunks by what loads it, not split wherever two entry points differ:
 *
 * - `lib`: everything `resil` itself loads (dist/index.js is a facade over it), and the credential
 *   redaction every entry point uses;
 * - `scheduler`: the job model and its validation, which the CLI, `resil/scheduler` and the
 *   runner share;
 * - `cli-common`: the CLI's small helpers every command uses;
 * - `loader`: the config loader with cosmiconfig and what it requires.
 *
 * The rest (the runner, the dashboard, the metrics server, each command) is chunked as the
 * imports fall. Packages stay imports, except the two only the CLI uses, commander and cosmiconfig
 * (with what they require): a CommonJS package imported from ESM goes through Node's CommonJS
 * loader and a lexer pass for its export names (about 10 ms of every command for these two);
 * bundled, they are part of the chunks above (import-fresh, which cosmiconfig requires for one
 * fallback, is replaced by `scripts/bundle-shims/import-fresh.cjs`). Their licenses are collected into
 * `dist/THIRD-PARTY-LICENSES.txt`. Each file has a source map with its sources inside, but the
 * dashboard page's script, bundled for the browser apart into `dist/cli/dashboard.js`. tsc
 * writes the declarations (`.d.ts`), one per source file, beside them.
 * `npm run bench -- cli-cold-start` measures the result.
 *
 * A build replaces each file by a rename (tests that find dist/ stale rebuild it while others run
 * the binary), then removes the JavaScript and maps that the new build no longer has.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Plugin, rolldown } from 'rolldown';

const root = fileURLToPath(new URL('..', import.meta.url));

/** `./dist/stores/redis/index.js` -> `src/stores/redis/index.ts`, for each entry of `exports`. */
function entryPoints(manifest: { exports: Record<string, unknown> }): string[] {
  // The worker thread of a job with `isolation: 'worker'`, which the CLI starts by its path.
  const sources = new Set<string>(['src/cli/main.ts', 'src/config/job-worker.ts']);
  for (const target of Object.values(manifest.exports)) {
    const file = typeof target === 'string' ? target : (target as { default?: string }).default;
    if (file === undefined || !file.startsWith('./dist/') || !file.endsWith('.js')) continue;
    sources.add(`src/${file.slice('./dist/'.length, -'.js'.length)}.ts`);
  }
  return [...sources];
}

/** The package a bare specifier names (`@scope/name/sub` -> `@scope/name`), or null for any other. */
export function packageNameOf(specifier: string): string | null {
  if (/^(?:[./#]|[a-z][a-z\d+.-]*:)/i.test(specifier) || isAbsolute(specifier)) return null;
  const parts = specifier.split('/');
  if (!specifier.startsWith('@')) return parts[0]!;
  return parts.length > 1 ? `${parts[0]}/${parts[1]}` : null;
}

/** Packages bundled into dist/ (see above); every other package stays an import. */
export const bundledPackages = ['commander', 'cosmiconfig'];

/** What cosmiconfig requires only for a TypeScript meta config (`.config/config.ts`): an optional peer. */
const optionalRequires = ['typescript'];

function isExternal(id: string, importer: string | undefined): boolean {
  if (id.startsWith('node:')) return true;
  const name = packageNameOf(id);
  if (name === null) return false;
  if (optionalRequires.includes(name)) return true;
  // A bundled package's own dependencies come along.
  return (
    !bundledPackages.includes(name) && !(importer !== undefined && /[\\/]node_modules[\\/]/.test(importer))
  );
}

const path = (pattern: string) => new RegExp(pattern.replaceAll('/', '[\\\\/]'));

/** The modules `entry` loads, itself and those its static imports reach (filled in at the end of the build's graph). */
function staticGraphOf(entry: string): { plugin: Plugin; modules: Set<string> } {
  const modules = new Set<string>();
  const plugin: Plugin = {
    name: 'static-graph',
    buildEnd() {
      const pending = [entry];
      while (pending.length > 0) {
        const id = pending.pop()!;
        if (modules.has(id)) continue;
        modules.add(id);
        for (const imported of this.getModuleInfo(id)?.importedIds ?? []) pending.push(imported);
      }
    },
  };
  return { plugin, modules };
}

/** The license texts of the packages inside the bundle, one after another. */
function thirdPartyLicenses(moduleIds: Iterable<string>): string {
  const directories = new Set<string>();
  for (const id of moduleIds) {
    const match = /^(.*[\\/]node_modules[\\/](?:@[^\\/]+[\\/])?[^\\/]+)[\\/]/.exec(id);
    if (match !== null) directories.add(match[1]!);
  }
  const sections = [...directories].sort().map((directory) => {
    const { name, version, license } = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      license?: string;
    };
    const file = readdirSync(directory).find((entry) => /^licen[cs]e/i.test(entry));
    const text =
      file === undefined ? `License: ${license ?? 'unknown'}\n` : readFileSync(join(directory, file), 'utf8');
    return `${name}@${version}\n\n${text.trimEnd()}\n`;
  });
  return `dist/ bundles the following packages.\n\n${sections.join(`\n${'-'.repeat(72)}\n\n`)}`;
}

function writeReplacing(file: string, contents: string | Uint8Array, written: Set<string>): void {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, file);
  written.add(file);
}

/**
 * The dashboard page's script for the browser (`dist/cli/dashboard.js`, served as `/dashboard.js`):
 * src/cli/dashboard/page-script.ts with what it imports, in one file.
 */
async function dashboardScript(): Promise<string> {
  const bundle = await rolldown({
    cwd: root,
    input: 'src/cli/dashboard/page-script.ts',
    platform: 'browser',
    transform: { target: 'es2022' },
  });
  const { output } = await bundle.generate({ format: 'iife', strict: true });
  await bundle.close();
  return output[0].code;
}

export async function buildDist(): Promise<void> {
  const manifest = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
    exports: Record<string, unknown>;
  };
  const dist = join(root, 'dist');
  const library = staticGraphOf(resolve(root, 'src/index.ts'));
  const redaction = path('/src/(stores|scheduler)/credentials\\.ts$');
  const bundle = await rolldown({
    cwd: root,
    input: Object.fromEntries(
      entryPoints(manifest).map((source) => [source.slice('src/'.length, -'.ts'.length), source]),
    ),
    platform: 'node',
    external: (id, importer) => isExternal(id, importer),
    transform: { target: 'node20' },
    resolve: { alias: { 'import-fresh': join(root, 'scripts/bundle-shims/import-fresh.cjs') } },
    plugins: [library.plugin],
  });
  const { output } = await bundle.generate({
    dir: 'dist',
    format: 'es',
    entryFileNames: '[name].js',
    chunkFileNames: 'chunks/[name]-[hash].js',
    sourcemap: true,
    codeSplitting: {
      groups: [
        { name: 'lib', test: (id) => library.modules.has(id) || redaction.test(id), priority: 4 },
        {
          name: 'scheduler',
          test: path(
            '/src/scheduler/(config-error|timezone|job|job-defaults|job-modules|option-checks|option-names|resolve|validate-job)\\.ts$',
          ),
          priority: 3,
        },
        {
          name: 'cli-common',
          test: path(
            '/src/cli/(output|time-format|usage-error|stop-signals|launcher|listen-address|commands/instances|views/(store-read|instances|history|lease))\\.ts$',
          ),
          priority: 2,
        },
        {
          name: 'loader',
          // Not the job worker's entry: its top-level code runs in a worker thread only.
          test: path('/(src/config/(?!job-worker\\.ts$)|node_modules/(?!commander/))'),
          priority: 1,
        },
      ],
    },
  });
  await bundle.close();
  const written = new Set<string>();
  const moduleIds = new Set<string>();
  for (const file of output) {
    if (file.type === 'chunk') for (const id of file.moduleIds) moduleIds.add(id);
    writeReplacing(join(dist, file.fileName), file.type === 'chunk' ? file.code : file.source, written);
  }
  writeReplacing(join(dist, 'THIRD-PARTY-LICENSES.txt'), thirdPartyLicenses(moduleIds), written);
  writeReplacing(join(dist, 'cli/dashboard.js'), await dashboardScript(), written);
  for (const entry of readdirSync(dist, { recursive: true }) as string[]) {
    const file = join(dist, entry);
    if (/\.js(?:\.map)?$/.test(entry) && !written.has(file)) rmSync(file, { force: true });
  }
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildDist();
