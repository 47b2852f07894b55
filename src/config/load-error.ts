import { createRequire } from 'node:module';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildFailure } from 'esbuild';
import type { ConfigProblem } from '../scheduler/config-error.ts';
import { firstLine, redactCredentials } from '../scheduler/credentials.ts';

/** resil's own modules (`dist/` installed, `src/` in this repository): frames there are not the user's. */
const ownModules = `${dirname(dirname(fileURLToPath(import.meta.url)))}/`;

/** Each stack frame `at fn (file:line:column)` or `at file:line:column`. */
const stackFrames = /^\s*at (?:.*? \()?(.+?):(\d+):(\d+)\)?$/gm;

const toPath = (location: string) => (location.startsWith('file://') ? fileURLToPath(location) : location);

/** The first frame of `stack` in a file of the user's: not Node's, not a package's (jiti's), not resil's. */
function userFrame(stack = ''): string | undefined {
  for (const [, location, line, column] of stack.matchAll(stackFrames)) {
    const file = toPath(location!);
    if (isAbsolute(file) && !file.includes('/node_modules/') && !file.startsWith(ownModules)) {
      return `${file}:${line}:${column}`;
    }
  }
  return undefined;
}

/**
 * Turns what importing a config threw into one problem naming the file and, when it can be
 * known, the line: a missing module, cosmiconfig's JSON or YAML error, or an error the config (or
 * a module it imports) threw while loading. Syntax errors arrive located already: see
 * {@link syntaxErrorsIn}.
 */
export function describeLoadError(error: unknown, file: string): ConfigProblem {
  if (!(error instanceof Error)) {
    return { file, message: `the config threw while loading: ${redactCredentials(String(error))}` };
  }
  const message = error.message;
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
  return {
    file: userFrame(error.stack) ?? file,
    message: `the config threw while loading: ${redactCredentials(firstLine(message))}`,
  };
}

/**
 * Every syntax error in `file` and in the project files it imports, each at its
 * `file:line:column` (1-based), or none when they all parse. Neither Node nor jiti says where a
 * syntax error is in every case, nor finds more than the first: esbuild parses the whole graph
 * (packages left out) and reports them all. Asked only after a module failed to load.
 */
export async function syntaxErrorsIn(file: string): Promise<ConfigProblem[]> {
  // require(): esbuild is CommonJS, and import() would first scan its large main file for exports.
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const directory = dirname(file);
  const { errors = [] } = await esbuild
    .build({
      entryPoints: [file],
      absWorkingDir: directory,
      bundle: true,
      packages: 'external',
      write: false,
      platform: 'node',
      format: 'esm', // where top-level await parses
      logLevel: 'silent',
    })
    .catch((failure: Partial<BuildFailure>) => failure)
    .finally(() => esbuild.stop());
  // An import that does not resolve is the loader's to report, as Node words it.
  const located = errors.filter(
    ({ text, location }) => location !== null && !/^Could not resolve/.test(text),
  );
  return located.map(({ text, location: at }) => ({
    file: `${resolve(directory, at!.file)}:${at!.line}:${at!.column + 1}`,
    message: `syntax error: ${text}`,
  }));
}
