import { lstatSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Jiti } from 'jiti';
import { ConfigError } from '../scheduler/config-error.ts';
import { syntaxErrorsIn } from './load-error.ts';
import { tsconfigPathAliases } from './tsconfig-paths.ts';

let jiti: Jiti | undefined;

/**
 * One jiti for the process, so that a module several others import is evaluated once, as Node
 * would, with the tsconfig `paths` of the first module it loads (the config, or a job module).
 */
function transpiler(firstModule: string): Jiti {
  // require(): jiti's CommonJS build; import() would first scan it for its exports (about 15 ms).
  jiti ??= (createRequire(import.meta.url)('jiti') as typeof import('jiti')).createJiti(import.meta.url, {
    fsCache: privateCacheDirectory() ?? false,
    interopDefault: false,
    alias: tsconfigPathAliases(dirname(firstModule)),
  });
  return jiti;
}

/**
 * Where jiti keeps what it transpiled: `resil-compile-cache-<uid>` in the OS temp directory, not
 * in the project (which may be read-only), and only while no other user can write there (their
 * file would run as this user). Undefined otherwise: jiti then transpiles on every start.
 */
function privateCacheDirectory(): string | undefined {
  const uid = process.getuid?.();
  const path = join(tmpdir(), `resil-compile-cache-${uid ?? 'user'}`);
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    const stats = lstatSync(path);
    const own = stats.isDirectory() && (uid === undefined || stats.uid === uid);
    return own && (stats.mode & 0o022) === 0 ? path : undefined;
  } catch {
    return undefined;
  }
}

/** TypeScript through jiti; JavaScript through Node, or jiti when it imports TypeScript. */
async function importModule(file: string): Promise<Record<string, unknown>> {
  if (/\.[mc]?tsx?$/.test(file)) return transpiler(file).import(file);
  try {
    return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    // What Node throws, before the module runs, for JavaScript that imports TypeScript.
    const code = (error as { code?: unknown } | null)?.code;
    if (code !== 'ERR_UNKNOWN_FILE_EXTENSION' && code !== 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX') throw error;
    return transpiler(file).import(file);
  }
}

/**
 * Imports a JavaScript or TypeScript module and returns its default export. Throws `ConfigError`
 * naming every syntax error at its `file:line:column`; anything else the module throws as is.
 */
export async function importDefault(file: string): Promise<unknown> {
  try {
    const namespace = await importModule(file);
    const value = 'default' in namespace ? namespace.default : namespace;
    // Compiled CommonJS (`exports.default` beside `__esModule`) arrives as `{ default: module.exports }`.
    const esModule =
      typeof value === 'object' && value !== null && 'default' in value && '__esModule' in value;
    return esModule ? value.default : value;
  } catch (error) {
    const syntaxErrors = await syntaxErrorsIn(file);
    throw syntaxErrors.length > 0 ? new ConfigError(syntaxErrors, { cause: error }) : error;
  }
}
