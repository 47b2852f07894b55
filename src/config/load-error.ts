import { dirname, isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ConfigProblem } from '../scheduler/config-error.ts';
import { redactCredentials } from '../scheduler/credentials.ts';

/** resil's own modules (`dist/` installed, `src/` in this repository): frames there are not the user's. */
const ownModules = `${dirname(dirname(fileURLToPath(import.meta.url)))}/`;

/** A stack frame `at fn (file:line:column)` or `at file:line:column`. */
const stackFrame = /^\s*at (?:.*? \()?(.+?):(\d+):(\d+)\)?$/;

function toPath(location: string): string {
  return location.startsWith('file://') ? fileURLToPath(location) : location;
}

/**
 * The first frame of `stack` in the user's own code: not Node's, not node_modules (jiti's among
 * them), not resil's.
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
      toPath(file).startsWith(ownModules)
    ) {
      continue;
    }
    return `${toPath(file)}:${match[2]}:${match[3]}`;
  }
  return undefined;
}

function firstLine(text: string): string {
  return text.split('\n').find((line) => line.trim() !== '') ?? text;
}

/**
 * Turns what importing a config threw into one problem naming the file and, when it can be
 * known, the line: a missing module, cosmiconfig's JSON or YAML error, or an error the config (or
 * a module it imports) threw while loading. Syntax errors arrive located already (`ConfigError`,
 * see syntax-errors.ts); one esbuild did not see is reported with where it was thrown.
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
    // Node's ESM loader names the importer in its message; the CommonJS resolver (jiti's) in
    // `requireStack`, and says "module" for a package too, where the ESM loader says "package".
    const importer =
      /imported from (\S+)/.exec(message)?.[1] ?? (error as { requireStack?: string[] }).requireStack?.[0];
    const line = firstLine(message).replace(/ imported from \S+/, '');
    const specifier = /^Cannot find module '(.+)'$/.exec(line)?.[1];
    const bare = specifier !== undefined && !specifier.startsWith('.') && !isAbsolute(specifier);
    return {
      file: importer === undefined ? file : toPath(importer),
      message: bare ? `Cannot find package '${specifier}'` : line,
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
