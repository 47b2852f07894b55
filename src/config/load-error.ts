import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ConfigProblem } from '../scheduler/config-error.ts';
import { redactCredentials } from '../scheduler/credentials.ts';
import { bundleDirectoryPrefix } from './bundle-typescript.ts';

/** esbuild's `file:line:column: ERROR: text`, as tsx reports a TypeScript syntax error. */
const transformErrorLine = /^(.+?):(\d+):(\d+): ERROR: (.+)$/m;
/** A stack frame `at fn (file:line:column)` or `at file:line:column`. */
const stackFrame = /^\s*at (?:.*? \()?(.+?):(\d+):(\d+)\)?$/;

function toPath(location: string): string {
  return location.startsWith('file://') ? fileURLToPath(location) : location;
}

/** A location in the temp bundle of a TypeScript config: esbuild's helpers, not the user's code. */
function isInBundle(location: string): boolean {
  return toPath(location).startsWith(bundleDirectoryPrefix);
}

/** The first frame of `stack` in the user's own code (not Node's, not node_modules, not the bundle's helpers). */
function userFrame(stack: string | undefined): string | undefined {
  for (const line of stack?.split('\n') ?? []) {
    const match = stackFrame.exec(line);
    if (match === null) continue;
    const file = match[1]!;
    if (
      file.startsWith('node:') ||
      file.includes('/node_modules/') ||
      !/^(file:|\/|[A-Za-z]:\\)/.test(file) ||
      isInBundle(file)
    ) {
      continue;
    }
    return `${toPath(file)}:${match[2]}:${match[3]}`;
  }
  return undefined;
}

/**
 * Node reports a syntax error in an ES module without its location (it only prints it for a crash).
 * `node --check` prints it; only run on this error path.
 */
function locateJavaScriptSyntaxError(file: string): string | undefined {
  if (!/\.[mc]?js$/.test(file)) return undefined;
  const check = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: 5_000 });
  const first = check.stderr?.split('\n')[0];
  const match = first === undefined ? null : /^(.+):(\d+)$/.exec(first);
  return match === null ? undefined : `${toPath(match[1]!)}:${match[2]}`;
}

function firstLine(text: string): string {
  return text.split('\n').find((line) => line.trim() !== '') ?? text;
}

/**
 * Turns what importing a config threw into one problem naming the file and, when it can be
 * known, the line: a TypeScript or JavaScript syntax error, a missing module, or an error the
 * config (or a module it imports) threw while loading.
 */
export function describeLoadError(error: unknown, file: string): ConfigProblem {
  if (!(error instanceof Error)) {
    return { file, message: `the config threw while loading: ${redactCredentials(String(error))}` };
  }
  const message = error.message;
  const transform = transformErrorLine.exec(message);
  if (error.name === 'TransformError' && transform !== null) {
    return {
      file: `${transform[1]}:${transform[2]}:${transform[3]}`,
      message: `syntax error: ${transform[4]}`,
    };
  }
  if (error instanceof SyntaxError) {
    const location = locateJavaScriptSyntaxError(file) ?? userFrame(error.stack);
    return location === undefined
      ? { file, message: `syntax error in the config or a module it imports: ${message}` }
      : { file: location, message: `syntax error: ${message}` };
  }
  const code = (error as { code?: unknown }).code;
  if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
    const importer = /imported from (\S+)/.exec(message)?.[1];
    return {
      file: importer === undefined || isInBundle(importer) ? file : toPath(importer),
      message: `${firstLine(message).replace(/ imported from \S+/, '')}`,
    };
  }
  // JSON / YAML errors from cosmiconfig carry the location in their first lines.
  if (/^(JSON|YAML) Error in /.test(message)) {
    const filepath = (error as { filepath?: unknown }).filepath;
    return {
      file: typeof filepath === 'string' ? filepath : file,
      message: `syntax error: ${redactCredentials(message.split('\n').slice(1).join(' ').trim() || message)}`,
    };
  }
  const where = userFrame(error.stack);
  return {
    file: where ?? file,
    message: `the config threw while loading: ${redactCredentials(firstLine(message))}`,
  };
}
