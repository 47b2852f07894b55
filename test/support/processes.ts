/**
 * Child processes for fault tests: spawn a server or a holder script, wait for a line of its
 * output, pause/kill it by pid, and make sure nothing started here outlives the test process.
 *
 * Only pids started through this module are ever signalled.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export interface SpawnedProcess {
  readonly pid: number;
  readonly child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the first output line matching `pattern` (already written or to come); rejects after `timeoutMs` or on exit. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Settles when the process has exited: its exit code, or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** True once the process has exited. */
  hasExited(): boolean;
  /** Sends `signal` to this pid (no-op once exited). */
  kill(signal: NodeJS.Signals): void;
  /** SIGCONT (in case it is paused), SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Name used in error messages. Defaults to the command. */
  name?: string;
}

const running = new Set<SpawnedProcess>();
let exitHookInstalled = false;

/** SIGKILLs every process started here that is still running (after a SIGCONT, in case it is paused). */
function killAll(): void {
  for (const spawned of running) {
    try {
      process.kill(spawned.pid, 'SIGCONT');
      process.kill(spawned.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Synchronous on purpose: at 'exit' no more I/O runs, only signals can still be sent.
  process.once('exit', killAll);
  // A test process ended by a signal (a run interrupted with Ctrl-C, or stopped by `timeout`) emits
  // no 'exit': stop what it started, then let the signal end it as it would have.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killAll();
      process.kill(process.pid, signal);
    });
  }
}

/** Spawns `command` with piped output, tracked so that it is killed when the test process exits. */
export function spawnProcess(
  command: string,
  args: readonly string[],
  options: SpawnOptions = {},
): SpawnedProcess {
  installExitHook();
  const name = options.name ?? command;
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`Could not start ${name}`);
  const pid = child.pid;
  let text = '';
  let exitState: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const watchers = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    for (const watcher of watchers) watcher();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      exitState = { code, signal };
      running.delete(spawned);
      for (const watcher of watchers) watcher();
      resolve(exitState);
    });
  });

  const spawned: SpawnedProcess = {
    pid,
    child,
    output: () => text,
    exited,
    hasExited: () => exitState !== undefined,
    waitForOutput(pattern, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = text.split('\n').find((candidate) => pattern.test(candidate));
          if (line !== undefined) return finish(() => resolve(line));
          if (exitState) {
            finish(() =>
              reject(new Error(`${name} (pid ${pid}) exited before printing ${pattern}:\n${tail(text)}`)),
            );
          }
        };
        const timer = setTimeout(
          () =>
            finish(() =>
              reject(
                new Error(
                  `${name} (pid ${pid}) did not print ${pattern} within ${timeoutMs} ms:\n${tail(text)}`,
                ),
              ),
            ),
          timeoutMs,
        );
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          watchers.delete(check);
          settle();
        };
        watchers.add(check);
        check();
      });
    },
    kill(signal) {
      if (exitState) return;
      try {
        process.kill(pid, signal);
      } catch {
        // Exited between the check and the signal.
      }
    },
    async stop(graceMs = 5_000) {
      if (exitState) return;
      spawned.kill('SIGCONT');
      spawned.kill('SIGTERM');
      const timer = setTimeout(() => spawned.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
  running.add(spawned);
  return spawned;
}

function tail(text: string): string {
  return text.split('\n').slice(-15).join('\n');
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('Could not determine a free port'));
      });
    });
  });
}

/** True when `name` is an executable on PATH. */
export function commandExists(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Polls `condition` every `intervalMs` until it returns a truthy value (which is returned) or
 * `timeoutMs` passes (then it throws, naming `what`). Errors thrown by `condition` count as "not yet".
 */
export async function waitUntil<T>(
  what: string,
  condition: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 25 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<NonNullable<T> | T> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() >= deadline) {
      const reason = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${reason}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface ModuleRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Wall time from spawn to exit. */
  ms: number;
}

/**
 * Runs `source`, an ES module in TypeScript (through tsx) that imports from the repository root
 * (`./src/index.ts`), in a fresh Node process, and resolves when it exits. It is killed after
 * `killAfterMs`, so that a hang fails the test instead of stalling it.
 */
export function runModule(source: string, killAfterMs = 30_000): Promise<ModuleRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
      cwd: repositoryRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const guard = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}
