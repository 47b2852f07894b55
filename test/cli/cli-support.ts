/**
 * The real `resil` binary (`node bin/resil.js` on dist/) for the CLI tests, and throwaway projects
 * to run it in: a temp directory with `"type": "module"` and `node_modules/resil` linked to this
 * repo, so a config's `import { defineConfig } from 'resil'` resolves as in a user's project.
 */
import { execFile, execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const binary = join(repoRoot, 'bin/resil.js');

/**
 * The built files (`dist/...js`, relative to the repository) that hold code of the sources under
 * `sourceDirectory` (`src/cli/metrics/`), read from their source maps: dist/ is bundled, so a
 * source file has no output file of its own.
 */
export function distFilesWithSources(sourceDirectory: string): string[] {
  const dist = join(repoRoot, 'dist');
  return (readdirSync(dist, { recursive: true }) as string[])
    .filter((file) => file.endsWith('.js.map'))
    .filter((file) => {
      const { sources } = JSON.parse(readFileSync(join(dist, file), 'utf8')) as { sources: string[] };
      return sources.some((source) => source.includes(sourceDirectory));
    })
    .map((file) => `dist/${file.slice(0, -'.map'.length)}`);
}

const nobody = ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups'];

/**
 * The command prefix that runs the CLI as `nobody`, so file permissions are enforced (root ignores
 * them), or `[]` when that is not possible: not root, no `setpriv`, or a checkout `nobody` cannot
 * read (a clone inside a private temporary directory, say).
 */
export function asNobodyWhenPossible(): string[] {
  if (process.getuid?.() !== 0) return [];
  try {
    execFileSync(nobody[0]!, [...nobody.slice(1), 'test', '-r', join(repoRoot, 'dist/cli/main.js')], {
      stdio: 'ignore',
    });
    execFileSync(nobody[0]!, [...nobody.slice(1), 'test', '-r', binary], { stdio: 'ignore' });
    return nobody;
  } catch {
    return [];
  }
}

function newestIn(directory: string): number {
  let newest = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestIn(path) : statSync(path).mtimeMs);
  }
  return newest;
}

let built = false;

/** Builds dist/ when the CLI or config sources are newer than it (once per test file). */
export function ensureCliBuilt(): void {
  if (built) return;
  const output = join(repoRoot, 'dist/cli/main.js');
  const newestSource = Math.max(newestIn(join(repoRoot, 'src/cli')), newestIn(join(repoRoot, 'src/config')));
  if (!existsSync(output) || statSync(output).mtimeMs < newestSource) {
    try {
      execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'pipe', timeout: 180_000 });
    } catch (error) {
      // tsc still emits when another part of the tree has type errors; only a missing output is fatal.
      if (!existsSync(output)) {
        throw new Error(
          `The CLI tests run the built binary: \`npm run build\` failed and ${output} is missing.`,
          {
            cause: error,
          },
        );
      }
    }
  }
  built = true;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

export interface RunCliOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** Run under another program, e.g. `['setpriv', '--reuid=nobody', ...]`. */
  prefix?: readonly string[];
}

/** Runs `node bin/resil.js ...args`; never throws for a non-zero exit. */
export function runCli(args: readonly string[], options: RunCliOptions = {}): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NO_COLOR: undefined,
    FORCE_COLOR: undefined,
    ...options.env,
  };
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  const [command, ...rest] = [...(options.prefix ?? []), process.execPath, binary, ...args];
  const started = performance.now();
  return new Promise((resolvePromise) => {
    execFile(
      command!,
      rest,
      { cwd: options.cwd ?? repoRoot, env, timeout: options.timeoutMs ?? 30_000, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolvePromise({ code, stdout, stderr, durationMs: performance.now() - started });
      },
    );
  });
}

export interface Project {
  readonly directory: string;
  path(file: string): string;
  write(file: string, content: string): void;
  remove(): void;
}

/** A temp project where `resil` resolves to this repo. Files are written as given. */
export function createProject(
  files: Record<string, string> = {},
  packageJson: object = { type: 'module' },
): Project {
  const directory = mkdtempSync(join(tmpdir(), 'resil-cli-'));
  mkdirSync(join(directory, 'node_modules'));
  symlinkSync(repoRoot, join(directory, 'node_modules/resil'), 'dir');
  symlinkSync(join(repoRoot, 'node_modules/ioredis'), join(directory, 'node_modules/ioredis'), 'dir');
  const project: Project = {
    directory,
    path: (file) => join(directory, file),
    write(file, content) {
      mkdirSync(dirname(join(directory, file)), { recursive: true });
      writeFileSync(join(directory, file), content);
    },
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
  project.write('package.json', JSON.stringify(packageJson, null, 2));
  for (const [file, content] of Object.entries(files)) project.write(file, content);
  return project;
}

/** A `resil.config.ts` with `jobs` (TypeScript source for the array) and optional extra lines. */
export function tsConfig(jobs: string, options: { imports?: string; extra?: string } = {}): string {
  return `import { defineConfig } from 'resil';
${options.imports ?? ''}
export default defineConfig({
  ${options.extra ?? ''}
  jobs: ${jobs},
});
`;
}

/** Matches ANSI colour sequences. */
export const ansiPattern = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`);
