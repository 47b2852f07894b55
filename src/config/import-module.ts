import { lstatSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Jiti } from 'jiti';
import { ConfigError } from '../scheduler/config-error.ts';
import { syntaxErrorsIn } from './syntax-errors.ts';
import { tsconfigPathAliases } from './tsconfig-paths.ts';

const typeScriptExtension = /\.[mc]?tsx?$/;

/** What Node throws, before any module runs, for a JavaScript module that imports TypeScript. */
const typeScriptRefused = new Set(['ERR_UNKNOWN_FILE_EXTENSION', 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX']);

let jiti: Jiti | undefined;

/**
 * One jiti for the process, so that a module several others import is evaluated once, as Node
 * would, with the `paths` of the tsconfig.json that governs the first module it loads (the
 * config's, or a job module's beside it). Its cache of transpiled files is private to this user
 * (another user's file would run as this one) and outside the project, which may be read-only.
 */
function transpiler(firstModule: string): Jiti {
  if (jiti !== undefined) return jiti;
  // require(): jiti's CommonJS build; import() would first scan it for its exports (about 15 ms).
  const { createJiti } = createRequire(import.meta.url)('jiti') as typeof import('jiti');
  jiti = createJiti(import.meta.url, {
    fsCache: privateCacheDirectory() ?? false,
    interopDefault: false,
    alias: tsconfigPathAliases(dirname(firstModule)),
  });
  return jiti;
}

/** `resil-compile-cache-<uid>` in the OS temp directory, made 0700; undefined when it is not this user's alone. */
function privateCacheDirectory(): string | undefined {
  const uid = process.getuid?.();
  const path = join(tmpdir(), `resil-compile-cache-${uid ?? 'user'}`);
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    const stats = lstatSync(path);
    const own = uid === undefined || stats.uid === uid;
    return stats.isDirectory() && own && (stats.mode & 0o022) === 0 ? path : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `file`'s namespace: TypeScript through jiti, JavaScript through Node (and through jiti when it
 * imports TypeScript, which Node refuses before the module runs).
 */
async function importModule(file: string): Promise<Record<string, unknown>> {
  if (typeScriptExtension.test(file)) return transpiler(file).import(file);
  try {
    return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    if (!typeScriptRefused.has((error as { code?: unknown } | null)?.code as string)) throw error;
    return transpiler(file).import(file);
  }
}

/**
 * Imports a JavaScript or TypeScript module and returns its default export. Throws `ConfigError`
 * naming every syntax error at its `file:line:column`; anything else the module throws while it
 * loads as is.
 */
export async function importDefault(file: string): Promise<unknown> {
  try {
    return unwrapDefault(await importModule(file));
  } catch (error) {
    const syntaxErrors = await syntaxErrorsIn(file);
    throw syntaxErrors.length > 0 ? new ConfigError(syntaxErrors, { cause: error }) : error;
  }
}

/**
 * The default export of each of `files`, or why it could not be loaded: one after another, as
 * static imports would load them, so that a module that fails does so alone and one that several
 * of them import is evaluated once.
 */
export async function importDefaults(files: readonly string[]): Promise<PromiseSettledResult<unknown>[]> {
  const results: PromiseSettledResult<unknown>[] = [];
  for (const file of files) {
    try {
      results.push({ status: 'fulfilled', value: await importDefault(file) });
    } catch (reason) {
      results.push({ status: 'rejected', reason });
    }
  }
  return results;
}

function unwrapDefault(namespace: Record<string, unknown>): unknown {
  let value: unknown = 'default' in namespace ? namespace.default : namespace;
  // CommonJS compiled from an ES module (`exports.default` beside `__esModule`), imported by Node,
  // arrives as `{ default: module.exports }`.
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
