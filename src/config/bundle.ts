import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire, isBuiltin } from 'node:module';
import { basename, dirname, extname, isAbsolute, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BuildFailure, BuildResult, Message, Metafile, Plugin } from 'esbuild';
import { ConfigError, type ConfigProblem } from '../scheduler/config-error.ts';
import {
  type FileVersion,
  lookUpPackage,
  type PackageLookup,
  packageJsonOf,
  packageNameOf,
  sha256,
  statOf,
} from './compile-cache.ts';

/**
 * A config module and the project files it imports, bundled by esbuild into one ES module that
 * runs from anywhere (the compile cache): imports of packages and resil itself become absolute
 * file URLs of what Node would load (its conditions, `exports`), so they are the same module
 * instances as without a bundle; the project's own TypeScript, JavaScript and JSON are inlined.
 */
export interface Bundle {
  /** The ES module, with an inline source map to the original files. */
  readonly code: string;
  /** The project files inlined into it (absolute paths), as they were read: what a cached copy depends on. */
  readonly inputs: Readonly<Record<string, FileVersion>>;
  /** The files it imports at run time (absolute paths). */
  readonly externals: readonly string[];
  /** Where each package it imports (or leaves for Node to import) was found, from each importing directory. */
  readonly packages: readonly PackageLookup[];
}

/** A bundle, or why this module must be imported through tsx instead (see {@link bundleModule}). */
export type BundleResult = Bundle | { readonly fallback: string };

/** What `import.meta` becomes in each inlined file, bound there to that file's own values. */
const metaBinding = '__resil_import_meta__';
const metaNamespace = 'resil-import-meta';
/** What `import.meta.resolve` becomes: its answer depends on where the module is, which a bundle moves. */
const metaResolveBinding = '__resil_import_meta_resolve__';
/** The plugin's own `build.resolve()` calls, which it must not resolve again. */
const ownLookup = Symbol('resil own lookup');

const inlinedExtension = /\.(?:[mc]?[jt]sx?|json)$/;
const typeScriptExtension = /\.[mc]?tsx?$/;
const commonJsExtension = /\.c[jt]s$/;
/** `import(` and no string literal, in esbuild's output (which quotes literals with `"`). */
const computedImport = /\bimport\((?!")/;

type Esbuild = typeof import('esbuild');
let esbuild: Esbuild | undefined;

function loadEsbuild(): Esbuild {
  // require(): esbuild is CommonJS, and import() would first scan its large main file for exports.
  esbuild ??= createRequire(import.meta.url)('esbuild') as Esbuild;
  return esbuild;
}

/** Stops esbuild's service process, if it was started, so a long `resil run` keeps none beside it. */
export async function stopBundler(): Promise<void> {
  await esbuild?.stop();
}

function isPathSpecifier(specifier: string): boolean {
  return specifier.startsWith('.') || isAbsolute(specifier);
}

function isInNodeModules(file: string): boolean {
  return file.includes(`${sep}node_modules${sep}`);
}

/**
 * The file Node loads for `specifier` when it names the importer's own package (a self-reference,
 * through that package's `exports`), or undefined for any other import, or one Node cannot load.
 * Resolved as Node does even where a tsconfig `paths` alias maps the name to the package's
 * sources: the command and the config then share one copy of the package (in resil's own
 * repository, resil from dist/, as the command itself is).
 */
function selfReference(specifier: string, name: string, importer: string): string | undefined {
  const manifestPath = packageJsonOf(importer);
  if (manifestPath === null) return undefined;
  try {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { name?: unknown; exports?: unknown };
    if (manifest.name !== name || manifest.exports === undefined) return undefined;
    // require.resolve() applies `require` conditions, where Node's import of the bundle applies
    // `import`: with exports that tell them apart, the alias decides, as before.
    if (/"(?:import|require)"\s*:/.test(JSON.stringify(manifest.exports))) return undefined;
    const file = createRequire(importer).resolve(specifier);
    return /\.[mc]?js$/.test(file) ? file : undefined;
  } catch {
    return undefined;
  }
}

/** A Node-style "not found", named after the module that imports it. */
function notFound(specifier: string, resolveDir: string, importer: string): ConfigProblem {
  return {
    file: importer,
    message: isPathSpecifier(specifier)
      ? `Cannot find module '${resolve(resolveDir, specifier)}'`
      : `Cannot find package '${specifier}'`,
  };
}

/** Every error of a failed build as a problem: `file:line:column` (1-based) for a located one. */
function problemsOf(failure: BuildFailure, workingDirectory: string, file: string): ConfigProblem[] {
  const problems = new Map<string, ConfigProblem>();
  for (const error of failure.errors) {
    const detail = (error as Message & { detail?: ConfigProblem }).detail;
    const problem: ConfigProblem =
      detail !== undefined && typeof detail.message === 'string'
        ? detail
        : error.location === null
          ? { file, message: error.text }
          : {
              file: `${resolve(workingDirectory, error.location.file)}:${error.location.line}:${error.location.column + 1}`,
              message: `syntax error: ${error.text}`,
            };
    problems.set(`${problem.file}\0${problem.message}`, problem);
  }
  return [...problems.values()];
}

/** Why the bundle would not behave as Node (and tsx) would, or undefined when it does. */
function unbundleable(code: string, metafile: Metafile, warnings: readonly Message[]): string | undefined {
  const commonJs = warnings.find((warning) => warning.id === 'commonjs-variable-in-esm');
  if (commonJs !== undefined) return `${commonJs.location?.file ?? 'a module'} is CommonJS`;
  for (const [input, { imports }] of Object.entries(metafile.inputs)) {
    if (imports.some((entry) => entry.kind === 'require-call' || entry.kind === 'require-resolve')) {
      return `${input} uses require()`;
    }
  }
  if (code.includes(metaResolveBinding)) return 'it uses import.meta.resolve';
  if (computedImport.test(code)) return 'it imports a computed specifier';
  return undefined;
}

/**
 * Bundles `file` (TypeScript, or JavaScript that imports TypeScript) for the compile cache. Each
 * inlined file keeps its own `import.meta.url` / `filename` / `dirname` (and `__filename` /
 * `__dirname`); the inline source map points stack traces at the original files and lines.
 *
 * Returns `{ fallback }` for what a moved module cannot do as Node does (CommonJS, `require()`,
 * `import.meta.resolve`, `import(variable)`). Throws {@link ConfigError} with every syntax error
 * (`file:line:column`) and every static import that does not resolve.
 *
 * With `source`, the entry is that JavaScript instead of a file, as if it were `file` (which need
 * not exist): the module that imports several job modules so that they share one bundle.
 */
export async function bundleModule(file: string, source?: string): Promise<BundleResult> {
  if (commonJsExtension.test(file)) return { fallback: `${file} is CommonJS` };
  const externals = new Set<string>();
  const inputs: Record<string, FileVersion> = {};
  const packages = new Map<string, PackageLookup>();
  const plugin: Plugin = {
    name: 'resil-config',
    setup(build) {
      build.onResolve({ filter: /^resil-import-meta:/ }, (args) => ({
        path: args.path.slice(metaNamespace.length + 1),
        namespace: metaNamespace,
        sideEffects: false,
      }));
      build.onLoad({ filter: /.*/, namespace: metaNamespace }, (args) => {
        const meta = { url: pathToFileURL(args.path).href, filename: args.path, dirname: dirname(args.path) };
        return { contents: `export default ${JSON.stringify(meta)};`, loader: 'js' };
      });

      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === 'entry-point' || args.pluginData === ownLookup) return undefined;
        if (isBuiltin(args.path)) return { path: args.path, external: true };
        // Taken before esbuild resolves the import, so that a change after it shows at the next start.
        const name = packageNameOf(args.path);
        const own = name === null ? undefined : selfReference(args.path, name, args.importer);
        if (own !== undefined) {
          externals.add(own);
          return { path: pathToFileURL(own).href, external: true };
        }
        const key = `${args.resolveDir}\0${name}`;
        const lookup =
          name === null ? undefined : (packages.get(key) ?? lookUpPackage(name, args.resolveDir));
        const record = () => {
          if (lookup !== undefined) packages.set(key, lookup);
        };
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: ownLookup,
          with: args.with,
        });
        if (resolved.errors.length > 0 || resolved.path === '') {
          // A static import must resolve now, as Node would refuse to link the module; any other
          // only fails if it runs, so it is left for Node to report then.
          if (args.kind !== 'import-statement') {
            record();
            const path = isPathSpecifier(args.path) ? resolve(args.resolveDir, args.path) : args.path;
            return { path: isAbsolute(path) ? pathToFileURL(path).href : path, external: true };
          }
          const problem = notFound(args.path, args.resolveDir, args.importer);
          return { errors: [{ text: problem.message, detail: problem }] };
        }
        if (resolved.external) return { path: resolved.path, external: true };
        const inline =
          inlinedExtension.test(resolved.path) &&
          !isInNodeModules(resolved.path) &&
          // A package (or a tsconfig `paths` alias) stays an import unless Node could not load it.
          (isPathSpecifier(args.path) || typeScriptExtension.test(resolved.path));
        if (inline) return { path: resolved.path };
        record();
        externals.add(resolved.path);
        return { path: pathToFileURL(resolved.path).href + resolved.suffix, external: true };
      });

      build.onLoad({ filter: inlinedExtension }, async (args) => {
        const stat = statOf(args.path);
        const source = await readFile(args.path);
        inputs[args.path] = { stat, sha256: sha256(source) };
        const extension = extname(args.path).slice(1);
        if (extension === 'json') return { contents: source, loader: 'json' };
        // Appended, so no line or column moves; dropped again where the file does not use it.
        const meta = JSON.stringify(`${metaNamespace}:${args.path}`);
        const contents = `${source.toString('utf8')}\nimport ${metaBinding} from ${meta};\n`;
        const loader =
          extension === 'tsx' || extension === 'jsx'
            ? extension
            : typeScriptExtension.test(args.path)
              ? 'ts'
              : 'js';
        return { contents, loader };
      });
    },
  };

  const workingDirectory = dirname(file);
  let result: BuildResult<{ write: false; metafile: true }>;
  try {
    result = await loadEsbuild().build({
      ...(source === undefined
        ? { entryPoints: [file] }
        : {
            stdin: {
              contents: source,
              resolveDir: workingDirectory,
              sourcefile: basename(file),
              loader: 'js',
            },
          }),
      absWorkingDir: workingDirectory,
      outfile: 'config.mjs',
      bundle: true,
      write: false,
      metafile: true,
      format: 'esm',
      platform: 'node',
      target: `node${process.versions.node}`,
      // Node's own resolution: its conditions (no "module"), and `main` only.
      conditions: [],
      mainFields: ['main'],
      sourcemap: 'inline',
      // The map's sources are relative to the working directory: from there, wherever the bundle is.
      sourceRoot: pathToFileURL(`${workingDirectory}${sep}`).href,
      // Node maps stack frames without them (the files are on disk); half the bundle's size.
      sourcesContent: false,
      // Scope hoisting renames clashing top-level names; keep `fn.name` and stack frame names.
      keepNames: true,
      charset: 'utf8',
      define: {
        'import.meta.resolve': metaResolveBinding,
        'import.meta': metaBinding,
        __filename: `${metaBinding}.filename`,
        __dirname: `${metaBinding}.dirname`,
      },
      logLevel: 'silent',
      plugins: [plugin],
    });
  } catch (error) {
    const failure = error as BuildFailure;
    if (!Array.isArray(failure.errors) || failure.errors.length === 0) throw error;
    throw new ConfigError(problemsOf(failure, workingDirectory, file), { cause: error });
  }
  const code = result.outputFiles[0]!.text;
  const fallback = unbundleable(code, result.metafile, result.warnings);
  if (fallback !== undefined) return { fallback };
  return { code, inputs, externals: [...externals], packages: [...packages.values()] };
}
