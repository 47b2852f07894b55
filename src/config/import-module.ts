import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundleModule } from './bundle.ts';
import { cachedBundleUrl, sha256, storeBundle } from './compile-cache.ts';

const typeScriptExtension = /\.[mc]?tsx?$/;

/** Each file compiled once per process, as Node imports a module once: one file, one instance. */
const compiledModules = new Map<string, Promise<Record<string, unknown>>>();

async function importThroughTsx(file: string, reason: string): Promise<Record<string, unknown>> {
  if (process.env.RESIL_DEBUG) process.stderr.write(`resil: loading ${file} through tsx: ${reason}\n`);
  const { tsImport } = await import('tsx/esm/api');
  return tsImport(pathToFileURL(file).href, import.meta.url) as Promise<Record<string, unknown>>;
}

/**
 * `file` bundled (see bundle.ts) through the compile cache: a start after the first imports the
 * cached bundle, built by esbuild only when a file it came from has changed. What a bundle cannot
 * do as Node would goes through tsx's `tsImport()`, scoped to this module and what it imports.
 */
function importCompiled(file: string): Promise<Record<string, unknown>> {
  return importCached(file, undefined, (reason) => importThroughTsx(file, reason));
}

/**
 * The cached bundle of `entry` (a file, or the module `source` stands for), built and stored when
 * there is none or it is out of date; `orElse(reason)` when it cannot be bundled or stored.
 */
async function importCached<T>(
  entry: string,
  source: string | undefined,
  orElse: (reason: string) => Promise<T>,
): Promise<Record<string, unknown> | T> {
  const cached = cachedBundleUrl(entry);
  if (cached !== undefined) {
    try {
      return await importBundle(cached);
    } catch (error) {
      // Another start may have pruned the entry (not written for a week) since it was checked.
      const code = (error as { code?: unknown } | null)?.code;
      if (code !== 'ERR_MODULE_NOT_FOUND' || existsSync(fileURLToPath(cached))) throw error;
    }
  }
  const bundle = await bundleModule(entry, source);
  if ('fallback' in bundle) return orElse(bundle.fallback);
  const url = storeBundle(entry, bundle);
  if (url === undefined) return orElse('no usable compile cache directory');
  return importBundle(url);
}

/**
 * Several TypeScript modules as one bundle, so that a module two of them import is one instance
 * (as Node would load it), not one per bundle: each one's namespace or the error it threw while
 * loading, in order, or undefined when they cannot be bundled together (each is then imported on
 * its own). The bundle imports each one lazily, so they load one after another, as static imports
 * would, and a module that throws fails alone without the others loading again.
 */
async function importTogether(
  files: readonly string[],
): Promise<PromiseSettledResult<Record<string, unknown>>[] | undefined> {
  // The cache entry's key comes from this name: it names the list, so another list is another entry.
  const entry = join(dirname(files[0]!), `job-modules-${sha256(files.join('\0')).slice(0, 16)}`);
  const source = `export const loaders = [${files.map((file) => `() => import(${JSON.stringify(file)})`).join(', ')}];`;
  let bundle: Record<string, unknown> | undefined;
  try {
    bundle = await importCached(entry, source, async () => undefined);
  } catch {
    // A syntax error, an import that does not resolve: imported on its own, each names its own.
    return undefined;
  }
  if (bundle === undefined) return undefined;
  const results: PromiseSettledResult<Record<string, unknown>>[] = [];
  for (const load of bundle.loaders as (() => Promise<Record<string, unknown>>)[]) {
    try {
      results.push({ status: 'fulfilled', value: await load() });
    } catch (error) {
      results.push({ status: 'rejected', reason: error });
    }
  }
  return results;
}

async function importBundle(url: string): Promise<Record<string, unknown>> {
  // Stack traces (and the line an error thrown while loading is reported at) name the original
  // files through the inline source map. Left on: a job's errors later point at its source too.
  process.setSourceMapsEnabled(true);
  return (await import(url)) as Record<string, unknown>;
}

function compiled(file: string): Promise<Record<string, unknown>> {
  let loading = compiledModules.get(file);
  if (loading === undefined) {
    loading = importCompiled(file);
    compiledModules.set(file, loading);
  }
  return loading;
}

/**
 * Imports a JavaScript or TypeScript module and returns its default export. JavaScript is
 * imported by Node itself; TypeScript, and JavaScript that imports TypeScript, is compiled (see
 * {@link importCompiled}). Throws `ConfigError` for a syntax error or an import that does not
 * resolve, naming each `file:line:column`; anything the module throws while it loads as is.
 */
export async function importDefault(file: string): Promise<unknown> {
  if (typeScriptExtension.test(file)) return unwrapDefault(await compiled(file));
  try {
    return unwrapDefault(await import(pathToFileURL(file).href));
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    // Node stops at the first `.ts` file of a static import, before the module runs.
    if (code === 'ERR_UNKNOWN_FILE_EXTENSION') return unwrapDefault(await compiled(file));
    // Node does not say where a module's syntax error is; esbuild does (and throws it).
    if (error instanceof SyntaxError) await bundleModule(file);
    throw error;
  }
}

/**
 * The default export of each of `files`, as {@link importDefault} gives it, or why it could not be
 * loaded. The TypeScript ones are bundled together, so a project module that several of them
 * import is evaluated once, as Node would. Where they cannot be (a syntax error, an import that
 * does not resolve, what needs tsx), each is imported on its own, which names the one at fault.
 */
export async function importDefaults(files: readonly string[]): Promise<PromiseSettledResult<unknown>[]> {
  const typeScript = [...new Set(files.filter((file) => typeScriptExtension.test(file)))];
  const together = typeScript.length > 1 ? await importTogether(typeScript) : undefined;
  const loaded = new Map(together?.map((result, index) => [typeScript[index]!, result]));
  return Promise.allSettled(
    files.map((file) => {
      const result = loaded.get(file);
      if (result === undefined) return importDefault(file);
      return result.status === 'fulfilled'
        ? Promise.resolve(unwrapDefault(result.value))
        : Promise.reject(result.reason);
    }),
  );
}

function unwrapDefault(namespace: Record<string, unknown>): unknown {
  let value: unknown = 'default' in namespace ? namespace.default : namespace;
  // A CommonJS module's `export default` (tsx compiles TypeScript in a CommonJS package to one)
  // arrives as `module.exports.default`.
  if (
    value !== null &&
    typeof value === 'object' &&
    'default' in value &&
    Object.keys(value).every((key) => key === 'default' || key === '__esModule')
  ) {
    value = (value as { default: unknown }).default;
  }
  return value;
}
