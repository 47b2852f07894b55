import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ConfigProblem } from '../scheduler/config-error.ts';
import { firstLine, redactCredentials } from '../scheduler/credentials.ts';
import { isInCompileCache } from './compile-cache.ts';

/** resil's own modules (`dist/` installed, `src/` in this repository): frames there are not the user's. */
const ownModules = `${dirname(dirname(fileURLToPath(import.meta.url)))}/`;

/** A stack frame `at fn (file:line:column)` or `at file:line:column`. */
const stackFrame = /^\s*at (?:.*? \()?(.+?):(\d+):(\d+)\)?$/;

function toPath(location: string): string {
  return location.startsWith('file://') ? fileURLToPath(location) : location;
}

/**
 * The first frame of `stack` in the user's own code: not Node's, not node_modules, not resil's,
 * not a compiled bundle's own helpers (the user's frames in it are source-mapped to their files).
 */
function userFrame(stack: string | undefined): string | undefined {
  for (const line of stack?.split('\n') ?? []) {
    const match = stackFrame.exec(line);
    if (match === null) continue;
    const file = match[1]!;
    if (
      file.startsWith('node:') ||
      file.includes('/node_modules/') ||
      !/^(file:|\/|[A-Za-z]:\\)/.test(file) ||
      toPath(file).startsWith(ownModules) ||
      isInCompileCache(toPath(file))
    ) {
      continue;
    }
    return `${toPath(file)}:${match[2]}:${match[3]}`;
  }
  return undefined;
}

/**
 * Turns what importing a config threw into one problem naming the file and, when it can be
 * known, the line: a missing module, cosmiconfig's JSON or YAML error, or an error the config (or
 * a module it imports) threw while loading. Syntax errors arrive located already (`ConfigError`
 * from the bundler); one only Node saw is reported with where it was thrown.
 */
export function describeLoadError(error: unknown, file: string): ConfigProblem {
  if (!(error instanceof Error)) {
    return { file, message: `the config threw while loading: ${redactCredentials(String(error))}` };
  }
  const message = error.message;
  if (error instanceof SyntaxError) {
    const location = userFrame(error.stack);
    return location === undefined
      ? { file, message: `syntax error in the config or a module it imports: ${message}` }
      : { file: location, message: `syntax error: ${message}` };
  }
  const code = (error as { code?: unknown }).code;
  if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
    const importer = /imported from (\S+)/.exec(message)?.[1];
    return {
      file: importer === undefined || isInCompileCache(toPath(importer)) ? file : toPath(importer),
      message: firstLine(message).replace(/ imported from \S+/, ''),
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
