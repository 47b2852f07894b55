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

function isTypeScriptNeeded(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[mc]?tsx?\b/.test(String((error as Error).message));
}

/**
 * Imports a JavaScript or TypeScript module in place (no compiled copy is written anywhere, so a
 * read-only directory works) and returns its default export.
 */
export async function importDefault(file: string): Promise<unknown> {
  const url = pathToFileURL(file).href;
  if (typeScriptExtensions.has(extname(file))) await enableTypeScript(file);
  let namespace: Record<string, unknown>;
  try {
    namespace = await import(url);
  } catch (error) {
    // A `.js` config importing `./jobs/x.ts`: Node refuses the `.ts` while linking, before any
    // module ran, so importing again with TypeScript enabled runs nothing twice.
    if (typeScriptSupport !== undefined || !isTypeScriptNeeded(error)) throw error;
    await enableTypeScript(file);
    namespace = await import(`${url}?typescript`);
  }
  return unwrapDefault(namespace);
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
