import { existsSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const typeScriptExtensions = new Set(['.ts', '.mts', '.cts', '.tsx']);

let typeScriptSupport: Promise<void> | undefined;

/** True when `.ts` files next to `file` are CommonJS: the nearest package.json lacks `"type": "module"`. */
function isCommonJsScope(file: string): boolean {
  for (let directory = dirname(file); ; directory = dirname(directory)) {
    const manifest = join(directory, 'package.json');
    if (existsSync(manifest)) {
      try {
        return (JSON.parse(readFileSync(manifest, 'utf8')) as { type?: unknown }).type !== 'module';
      } catch {
        return true;
      }
    }
    if (dirname(directory) === directory) return true;
  }
}

/**
 * Registers tsx's module hooks in this process, once: the ESM hooks for `import` and, when the
 * config sits in a CommonJS package (or is `.cts`), the CommonJS ones too, as the `tsx` CLI does.
 * Global rather than scoped to one import, so modules the config loads later (a job's
 * `await import('./x.ts')`) work too. Loaded lazily: tsx and esbuild cost more to start than the
 * rest of the CLI together.
 */
function enableTypeScript(file: string): Promise<void> {
  typeScriptSupport ??= (async () => {
    const needsCommonJs = extname(file) === '.cts' || (extname(file) !== '.mts' && isCommonJsScope(file));
    const [esm, cjs] = await Promise.all([
      import('tsx/esm/api'),
      needsCommonJs ? import('tsx/cjs/api') : undefined,
    ]);
    cjs?.register();
    esm.register();
  })();
  return typeScriptSupport;
}

/** A static or dynamic import of a `.ts` / `.mts` / `.cts` / `.tsx` path. */
const typeScriptImport = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"][^'"]+\.[mc]?tsx?['"]/;

/** True when a JavaScript config imports TypeScript itself (`import job from './jobs/x.ts'`). */
function importsTypeScript(file: string): boolean {
  try {
    return typeScriptImport.test(readFileSync(file, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * Imports a JavaScript or TypeScript module in place (no compiled copy is written anywhere, so a
 * read-only directory works) and returns its default export.
 */
export async function importDefault(file: string): Promise<unknown> {
  // Decided before importing: Node keeps a module that failed to load as failed, so importing
  // again once TypeScript is enabled would fail the same way.
  if (typeScriptExtensions.has(extname(file)) || importsTypeScript(file)) await enableTypeScript(file);
  try {
    return unwrapDefault(await import(pathToFileURL(file).href));
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ERR_UNKNOWN_FILE_EXTENSION' && typeScriptSupport === undefined) {
      (error as Error).message +=
        ' (a JavaScript config that loads TypeScript through another module: import the .ts file from the config itself, or name the config resil.config.ts)';
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
