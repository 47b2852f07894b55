import { extname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { importBundled, reachesTypeScript } from './bundle-typescript.ts';
import { isCommonJsModule } from './module-scope.ts';

const typeScriptExtensions = new Set(['.ts', '.mts', '.cts', '.tsx']);

let typeScriptSupport: Promise<void> | undefined;

/**
 * Registers tsx's module hooks in this process, once: the ESM hooks for `import` and, when the
 * config is CommonJS (`.cts`, or a package without `"type": "module"`), the CommonJS ones too, as
 * the `tsx` CLI does. Global rather than scoped to one import, so modules the config loads later
 * (a job's `await import(name)`) work too. Only for what a bundle cannot do (see
 * bundle-typescript.ts): on Node 20 `register()` starts a loader thread that loads tsx and esbuild
 * again, which costs more to start than the rest of the CLI together.
 */
function enableTypeScript(file: string): Promise<void> {
  typeScriptSupport ??= (async () => {
    const [esm, cjs] = await Promise.all([
      import('tsx/esm/api'),
      isCommonJsModule(file) ? import('tsx/cjs/api') : undefined,
    ]);
    cjs?.register();
    esm.register();
  })();
  return typeScriptSupport;
}

/** Each file bundled once, as Node imports a module once: the same file gives the same instance. */
const bundledModules = new Map<string, Promise<Record<string, unknown> | undefined>>();

/** The bundled module's namespace, or undefined when this file needs tsx's hooks instead. */
function importThroughBundle(file: string): Promise<Record<string, unknown> | undefined> {
  let loading = bundledModules.get(file);
  if (loading === undefined) {
    loading = importBundled(file).then((result) => {
      if ('namespace' in result) return result.namespace;
      if (process.env.RESIL_DEBUG)
        process.stderr.write(`resil: loading ${file} through tsx: ${result.fallback}\n`);
      return undefined;
    });
    bundledModules.set(file, loading);
  }
  return loading;
}

/**
 * Imports a JavaScript or TypeScript module and returns its default export. TypeScript (and
 * JavaScript that imports TypeScript) is bundled with esbuild into a temp directory and imported
 * from there; nothing is written beside the module, so a read-only directory works.
 */
export async function importDefault(file: string): Promise<unknown> {
  // Decided before importing: Node keeps a module that failed to load as failed, so importing
  // again once TypeScript is enabled would fail the same way.
  if (typeScriptExtensions.has(extname(file)) || (await reachesTypeScript(file))) {
    // Once tsx's hooks are on, everything goes through them, so a module shared by the config and
    // a job module is one instance.
    if (typeScriptSupport === undefined) {
      const namespace = await importThroughBundle(file);
      if (namespace !== undefined) return unwrapDefault(namespace);
    }
    await enableTypeScript(file);
  }
  try {
    return unwrapDefault(await import(pathToFileURL(file).href));
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ERR_UNKNOWN_FILE_EXTENSION' && typeScriptSupport === undefined) {
      (error as Error).message +=
        ' (a JavaScript config that loads TypeScript in a way resil cannot see: import the .ts file with a literal path, or name the config resil.config.ts)';
    }
    throw error;
  }
}

function unwrapDefault(namespace: Record<string, unknown>): unknown {
  let value: unknown = 'default' in namespace ? namespace.default : namespace;
  // A TypeScript file in a CommonJS package is compiled to CommonJS: its `export default` arrives
  // as `module.exports.default`.
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
