import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire, isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BuildFailure, Message, OnResolveArgs, Plugin, ResolveResult } from 'esbuild';
import { isCommonJsModule } from './module-scope.ts';

/**
 * TypeScript configs are bundled in this process with esbuild instead of going through tsx's
 * `module.register()` hooks: on Node 20 those start a loader thread that loads tsx and esbuild a
 * second time, which costs more than the rest of `resil jobs list` together.
 *
 * The bundle holds the config's TypeScript modules (and JSON) only. Every other import stays an
 * import, of the file esbuild resolved (Node's conditions and `exports`), so packages, `resil`
 * itself and the user's JavaScript are the same module instances they would be without a bundle.
 */

const typeScriptExtension = /\.[mc]?tsx?$/;
const inlinedExtension = /\.(?:[mc]?tsx?|json)$/;
const javaScriptExtension = /\.[mc]?jsx?$/;

/** Temp directories holding a bundle while it is imported; frames there are not the user's code. */
export const bundleDirectoryPrefix = join(tmpdir(), 'resil-config-');

/** What each bundled module's `import.meta` becomes, bound per file to that file's own values (see the onLoad hook). */
const metaBinding = '__resil_import_meta__';
const metaNamespace = 'resil-import-meta';
/**
 * The specifiers the plugin decides on: bare ones (packages, tsconfig `paths`, builtins without
 * `node:`) and relative ones that do not name a TypeScript file. esbuild resolves `./x.ts` and
 * `node:x` itself, without a call into JavaScript per import (RE2 has no lookahead, hence the
 * spelled-out complements).
 */
const needsResolving = new RegExp(
  [
    '^(?:',
    // bare, but not node:
    '[^./n]|n$|n[^o]|no$|no[^d]|nod$|nod[^e]|node$|node[^:]',
    // `.`, `..`, or a relative or absolute path whose extension is not .ts / .mts / .cts / .tsx
    '|\\.\\.?$|(?:\\.\\.?(?:/.*)?|/.*)(?:[^sx]|[^t]s|[^.mc]ts|[^.][mc]ts|[^t]sx|[^.]tsx|[^s]x)$',
    ')',
  ].join(''),
);
/** Set on the `build.resolve()` the plugin makes itself, so it does not resolve its own lookups. */
const ownLookup = Symbol('resil own lookup');

/** `import.meta` as esbuild recognises it (whitespace allowed around the dot). */
const importMeta = /\bimport\s*\.\s*meta\b/;
/** `import.meta.resolve(...)`: its answer depends on where the module really is; tsx keeps that. */
const importMetaResolve = /\bimport\s*\.\s*meta\s*\.\s*resolve\b/;
/** `import(x)` of anything but a string literal resolves at run time, relative to the bundle. */
const computedImport = /\bimport\s*\(\s*(?!['"])/;
/** What only a CommonJS module has (tsx runs a `.ts` file in a CommonJS package as one). */
const commonJsOnly = /\brequire\s*[(.]|\bmodule\s*\.\s*exports\b|\bexports\s*\.|\b__dirname\b|\b__filename\b/;
/** A static or dynamic import of a `.ts` / `.mts` / `.cts` / `.tsx` path. */
const typeScriptImport = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"][^'"]+\.[mc]?tsx?['"]/;
/** A relative import's specifier, to follow a JavaScript module's own imports. */
const relativeImport = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.\.?\/[^'"]+)['"]/g;

type Esbuild = typeof import('esbuild');
let loadedEsbuild: Esbuild | undefined;
let activeBuilds = 0;

function esbuild(): Esbuild {
  // require(): esbuild is CommonJS, and import() would first scan its large main file for exports.
  loadedEsbuild ??= createRequire(import.meta.url)('esbuild') as Esbuild;
  return loadedEsbuild;
}

/**
 * Stops esbuild's service once no bundle is being built, so a long-running `resil run` does not
 * keep an idle process beside it. Deferred a turn: job modules loaded right after the config
 * reuse it.
 */
function releaseBundler(): void {
  activeBuilds -= 1;
  if (activeBuilds > 0) return;
  setImmediate(() => {
    if (activeBuilds > 0 || loadedEsbuild === undefined) return;
    void loadedEsbuild.stop();
  });
}

/** A module esbuild reported a syntax (or other located) error in. */
export class BundleSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    // describeLoadError reads `file:line:column: ERROR: text` from errors named so, as tsx reports them.
    this.name = 'TransformError';
  }
}

/** The result of {@link bundleConfig}: the bundle, or why this config needs tsx's hooks instead. */
export type BundleResult = { code: string } | { fallback: string };

/**
 * True when `file` (a JavaScript module outside node_modules) imports TypeScript, itself or
 * through the JavaScript modules it imports relatively: Node would meet a `.ts` file it cannot load.
 */
export async function reachesTypeScript(file: string, seen = new Set<string>()): Promise<boolean> {
  if (seen.has(file)) return false;
  seen.add(file);
  let source: string;
  try {
    source = await readFile(file, 'utf8');
  } catch {
    return false;
  }
  if (typeScriptImport.test(source)) return true;
  for (const [, specifier] of source.matchAll(relativeImport)) {
    const target = resolve(dirname(file), specifier!);
    if (javaScriptExtension.test(target) && (await reachesTypeScript(target, seen))) return true;
  }
  return false;
}

/** `./x`, `../x` or `/x`, as opposed to a package name (or a tsconfig `paths` alias). */
function isPathSpecifier(specifier: string): boolean {
  return specifier.startsWith('.') || specifier.startsWith('/');
}

function isInNodeModules(file: string): boolean {
  return file.includes(`${sep}node_modules${sep}`);
}

/** A Node-style "not found" error, named after the module that imports it (not the bundle). */
function moduleNotFound(specifier: string, resolveDir: string, importer: string): Error {
  const error = new Error(
    isPathSpecifier(specifier)
      ? `Cannot find module '${resolve(resolveDir, specifier)}' imported from ${importer}`
      : `Cannot find package '${specifier}' imported from ${importer}`,
  ) as Error & { code: string };
  error.code = 'ERR_MODULE_NOT_FOUND';
  return error;
}

/** The first located esbuild error as `file:line:column: ERROR: text` (column 0-based, as esbuild prints). */
function toLoadError(failure: BuildFailure, workingDirectory: string): Error {
  const located = failure.errors.find((message: Message) => message.location !== null);
  const first = located ?? failure.errors[0];
  if (first === undefined) return failure;
  if (first.detail instanceof Error) return first.detail;
  if (first.location === null) return new Error(first.text, { cause: failure });
  const { file, line, column } = first.location;
  const importer = resolve(workingDirectory, file);
  // esbuild resolves `./x.ts` itself: its "not found" becomes Node's, named after the importer.
  const unresolved = /^Could not resolve "(.+)"$/.exec(first.text);
  if (unresolved !== null) return moduleNotFound(unresolved[1]!, dirname(importer), importer);
  const error = new BundleSyntaxError(`${importer}:${line}:${column}: ERROR: ${first.text}`);
  error.cause = failure;
  return error;
}

/**
 * Bundles the config `file` (TypeScript, or JavaScript that imports TypeScript) into one ES module.
 * Each bundled module keeps its own `import.meta.url` / `dirname` / `filename`; the inline source
 * map points stack traces at the original files and lines. Returns `{ fallback }` for what a bundle
 * cannot do like tsx does (see the patterns above); throws for a syntax error (with its location)
 * or an import that cannot be resolved.
 */
export async function bundleConfig(file: string, outfile: string): Promise<BundleResult> {
  const { build } = esbuild();
  let fallback: string | undefined;
  const needsTsx = (reason: string) => {
    fallback ??= reason;
  };

  const lookups = new Map<string, Promise<ResolveResult>>();
  const plugin: Plugin = {
    name: 'resil-config',
    setup(builder) {
      builder.onResolve({ filter: /^resil-import-meta:/ }, (args) => ({
        path: args.path.slice(metaNamespace.length + 1),
        namespace: metaNamespace,
      }));
      builder.onLoad({ filter: /.*/, namespace: metaNamespace }, (args) => {
        const url = pathToFileURL(args.path).href;
        const meta = { url, filename: args.path, dirname: dirname(args.path) };
        return { contents: `export default ${JSON.stringify(meta)};`, loader: 'js' };
      });

      builder.onResolve({ filter: needsResolving }, async (args: OnResolveArgs) => {
        if (args.kind === 'entry-point' || args.pluginData?.[ownLookup] === true) return undefined;
        if (isBuiltin(args.path)) return { path: args.path, external: true };
        // Each job module imports `resil` from the same directory: one lookup serves them all.
        const key = `${args.kind}\0${args.resolveDir}\0${args.path}\0${JSON.stringify(args.with)}`;
        let lookup = lookups.get(key);
        if (lookup === undefined) {
          lookup = builder.resolve(args.path, {
            kind: args.kind,
            importer: args.importer,
            resolveDir: args.resolveDir,
            pluginData: { [ownLookup]: true },
            with: args.with,
          });
          lookups.set(key, lookup);
        }
        const resolved = await lookup;
        if (resolved.errors.length > 0 || resolved.path === '') {
          // A static import must resolve now, as Node would refuse to link the module; a dynamic
          // one only fails if it runs, so it is left for Node to report then.
          if (args.kind === 'import-statement') {
            return {
              errors: [
                {
                  text: resolved.errors[0]?.text ?? `Could not resolve "${args.path}"`,
                  detail: moduleNotFound(args.path, args.resolveDir, args.importer),
                },
              ],
            };
          }
          return {
            path: isPathSpecifier(args.path)
              ? pathToFileURL(resolve(args.resolveDir, args.path)).href
              : args.path,
            external: true,
          };
        }
        if (resolved.external) return { path: resolved.path, external: true };
        if (inlinedExtension.test(resolved.path)) return { path: resolved.path };
        // The user's own JavaScript (a relative import), not a package's, which Node runs as is.
        if (
          isPathSpecifier(args.path) &&
          javaScriptExtension.test(resolved.path) &&
          !isInNodeModules(resolved.path) &&
          (await reachesTypeScript(resolved.path))
        ) {
          needsTsx(`${resolved.path} is JavaScript that imports TypeScript`);
        }
        return {
          // require() takes a path; import() a URL.
          path:
            args.kind === 'require-call' || args.kind === 'require-resolve'
              ? resolved.path
              : pathToFileURL(resolved.path).href + resolved.suffix,
          external: true,
        };
      });

      builder.onLoad({ filter: /\.(?:[mc]?[jt]sx?)$/ }, (args) => {
        let contents = readFileSync(args.path, 'utf8');
        if (importMetaResolve.test(contents)) needsTsx(`${args.path} uses import.meta.resolve`);
        if (computedImport.test(contents)) needsTsx(`${args.path} imports a computed specifier`);
        const typeScript = typeScriptExtension.test(args.path);
        if (isCommonJsModule(args.path) && commonJsOnly.test(contents)) {
          needsTsx(`${args.path} is a CommonJS module`);
        }
        // Nothing to change: esbuild reads the file itself (cheaper than passing it back).
        if (!importMeta.test(contents)) return undefined;
        // `define` maps `import.meta` to this name in every file; this import binds it in this
        // file to this file's own URL and paths. Appended, so no line or column moves.
        contents += `\nimport ${metaBinding} from ${JSON.stringify(`${metaNamespace}:${args.path}`)};\n`;
        const extension = extname(args.path);
        const loader = extension === '.tsx' ? 'tsx' : extension === '.jsx' ? 'jsx' : typeScript ? 'ts' : 'js';
        return { contents, loader };
      });
    },
  };

  const workingDirectory = dirname(file);
  activeBuilds += 1;
  try {
    const result = await build({
      entryPoints: [file],
      absWorkingDir: workingDirectory,
      outfile,
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: 'inline',
      // Node maps frames without them (the files are on disk); half the bundle's size.
      sourcesContent: false,
      // Node's own resolution: its conditions (no "module"), and `main` only.
      conditions: [],
      mainFields: ['main'],
      // Scope hoisting renames clashing top-level names; keep `fn.name` and stack frame names.
      keepNames: true,
      charset: 'utf8',
      define: { 'import.meta': metaBinding },
      logLevel: 'silent',
      plugins: [plugin],
    });
    if (fallback !== undefined) return { fallback };
    return { code: result.outputFiles[0]!.text };
  } catch (error) {
    if (fallback !== undefined) return { fallback };
    const failure = error as BuildFailure;
    throw Array.isArray(failure.errors) ? toLoadError(failure, workingDirectory) : error;
  } finally {
    releaseBundler();
  }
}

/** A bundle written to its temp directory, ready to import; or why there is none. */
type PreparedBundle =
  | { outfile: string; directory: string }
  | { fallback: string; directory?: string }
  | { error: unknown; directory?: string };

/** Bundles started before the config was found (see {@link prepareBundle}), by file. */
const preparedBundles = new Map<string, Promise<PreparedBundle>>();

async function buildIntoTempDirectory(file: string): Promise<PreparedBundle> {
  let directory: string;
  try {
    directory = await mkdtemp(bundleDirectoryPrefix);
  } catch (error) {
    return { fallback: `no temp directory for the bundle (${(error as Error).message})` };
  }
  try {
    const outfile = join(directory, `${basename(file, extname(file))}.mjs`);
    const bundled = await bundleConfig(file, outfile);
    if ('fallback' in bundled) return { ...bundled, directory };
    await writeFile(outfile, bundled.code);
    return { outfile, directory };
  } catch (error) {
    return { error, directory };
  }
}

/**
 * Starts bundling `file` now, for {@link importBundled} to pick up: the config search runs while
 * esbuild works. For a config that is about to be loaded (`--config x.ts`, or the first config
 * file in the directory the search starts in); {@link discardPreparedBundles} drops it if not.
 */
export function prepareBundle(file: string): void {
  if (!preparedBundles.has(file)) preparedBundles.set(file, buildIntoTempDirectory(file));
}

/** Deletes the bundles {@link prepareBundle} started that nothing imported. */
export async function discardPreparedBundles(): Promise<void> {
  const unused = [...preparedBundles.values()];
  preparedBundles.clear();
  for (const prepared of await Promise.all(unused)) {
    if (prepared.directory !== undefined) await rm(prepared.directory, { recursive: true, force: true });
  }
}

/**
 * Bundles and imports `file`: the bundle is written to a fresh temp directory (never beside the
 * config, so a read-only project works), imported, and deleted as soon as the import settles.
 * Returns the module namespace, or `{ fallback }` (see {@link bundleConfig}).
 */
export async function importBundled(
  file: string,
): Promise<{ namespace: Record<string, unknown> } | { fallback: string }> {
  const preparing = preparedBundles.get(file) ?? buildIntoTempDirectory(file);
  preparedBundles.delete(file);
  const prepared = await preparing;
  try {
    if ('error' in prepared) throw prepared.error;
    if ('fallback' in prepared) return { fallback: prepared.fallback };
    // Stack traces (and the line an error thrown while loading is reported at) name the original
    // files through the inline source map. Left on: a job's errors later point at its source too.
    process.setSourceMapsEnabled(true);
    return { namespace: await import(pathToFileURL(prepared.outfile).href) };
  } finally {
    if (prepared.directory !== undefined) await rm(prepared.directory, { recursive: true, force: true });
  }
}
