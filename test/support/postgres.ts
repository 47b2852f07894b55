/**
 * PostgreSQL servers for tests.
 *
 * - `databaseUrlForTests()`: the shared database (DATABASE_URL, else a private `postgres` from PATH
 *   or /usr/lib/postgresql/<version>/bin), or `undefined` with a printed reason so the suite skips;
 *   with RESIL_REQUIRE_SERVICES=1 a missing database fails instead.
 * - `startPostgresServer()`: a private server on a free loopback port in a temp dir, for fault tests
 *   (stop it, SIGSTOP it, kill -9 it). It stops only the pid it started.
 * - `uniqueSchemaName(label)`: a schema name no other test file or run uses (CI shares one database).
 *
 * initdb refuses to run as root: as root, initdb and postgres run as the `postgres` user through
 * `setpriv`, which execs in place, so the pid we hold is the postmaster's own.
 *
 * @example
 * const databaseUrl = await databaseUrlForTests();
 * describe.skipIf(!databaseUrl)('my store', () => { ... });
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, type SpawnedProcess, spawnProcess } from './processes.ts';
import { sharedServiceUrl } from './services.ts';

const run = promisify(execFile);

export interface PostgresServer {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  readonly url: string;
  /** The postmaster's pid. */
  readonly pid: number;
  readonly process: SpawnedProcess;
  /** Fast shutdown of this server (SIGCONT first, in case it is paused), then removes its directory. */
  stop(): Promise<void>;
  /**
   * Sends `signal` to this server's postmaster. SIGSTOP, SIGCONT and SIGKILL also go to the
   * backends it forked, so the whole server stalls, resumes or crashes: a stopped postmaster
   * alone still answers on connections that are already open.
   */
  kill(signal: NodeJS.Signals): void;
}

// Runs detached beside each server: when the test process dies without stopping it (a vitest
// worker is killed, say, and no 'exit' handler runs), it stops the server and removes its directory.
// argv: parent pid, postmaster pid, directory.
const watchdogScript = `
const [parent, server] = process.argv.slice(1, 3).map(Number);
const dir = process.argv[3];
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
const signal = (pid, name) => { try { process.kill(pid, name); } catch {} };
const backends = () => require('node:fs').readdirSync('/proc').filter((e) => /^\\d+$/.test(e)).filter((e) => {
  try { const s = require('node:fs').readFileSync('/proc/' + e + '/stat', 'utf8');
    return Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]) === server; } catch { return false; }
}).map(Number);
const cleanUp = () => require('node:fs').rmSync(dir, { recursive: true, force: true });
const timer = setInterval(() => {
  if (!alive(server)) { clearInterval(timer); return; }
  if (alive(parent)) return;
  clearInterval(timer);
  for (const pid of [server, ...backends()]) signal(pid, 'SIGCONT');
  signal(server, 'SIGINT');
  const startedAt = Date.now();
  const wait = setInterval(() => {
    if (alive(server) && Date.now() - startedAt < 5000) return;
    clearInterval(wait);
    if (alive(server)) signal(server, 'SIGKILL');
    setTimeout(cleanUp, 200);
  }, 100);
}, 250);
`;

function startWatchdog(serverPid: number, dir: string): void {
  const watchdog = spawn(
    process.execPath,
    ['-e', watchdogScript, String(process.pid), String(serverPid), dir],
    {
      detached: true,
      stdio: 'ignore',
    },
  );
  watchdog.unref();
}

const wholeServerSignals = new Set<NodeJS.Signals>(['SIGSTOP', 'SIGCONT', 'SIGKILL']);

/** Pids whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 is the parent pid; the command name (field 2) may contain spaces, so parse after ')'.
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === pid) children.push(Number(entry));
    } catch {
      // Exited while we looked.
    }
  }
  return children;
}

export interface StartPostgresServerOptions {
  /** How long to wait for initdb plus start-up. Defaults to 20 s. */
  readyTimeoutMs?: number;
}

interface Binaries {
  readonly initdb: string;
  readonly postgres: string;
}

/** `initdb` and `postgres` from one installation: PATH first, else the newest Debian version. */
function findBinaries(): Binaries | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb'))) {
      return { initdb: join(dir, 'initdb'), postgres: join(dir, 'postgres') };
    }
  }
  const debian = '/usr/lib/postgresql';
  if (!existsSync(debian)) return undefined;
  const versions = readdirSync(debian)
    .filter((name) => existsSync(join(debian, name, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  const newest = versions[0];
  if (newest === undefined) return undefined;
  const bin = join(debian, newest, 'bin');
  return { initdb: join(bin, 'initdb'), postgres: join(bin, 'postgres') };
}

const isRoot = process.getuid?.() === 0;

/** `[command, args]` that runs `binary` as the postgres user when we are root, in place (same pid). */
function asServerUser(binary: string, args: string[]): [string, string[]] {
  if (!isRoot) return [binary, args];
  return ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', binary, ...args]];
}

function postgresUserIds(): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/**
 * Starts a private PostgreSQL (about 1.5 s: initdb, then start) on a free loopback port with
 * trust authentication and fsync off. Stop it with `stop()`; it is also killed when the test
 * process exits.
 */
export async function startPostgresServer(options: StartPostgresServerOptions = {}): Promise<PostgresServer> {
  const binaries = findBinaries();
  if (binaries === undefined) throw new Error('postgres/initdb not found on PATH or in /usr/lib/postgresql');
  if (isRoot && !existsSync('/usr/bin/setpriv') && !existsSync('/bin/setpriv')) {
    throw new Error('running as root needs setpriv (util-linux) to start postgres as the postgres user');
  }
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  const dir = mkdtempSync(join(tmpdir(), 'resil-pg-'));
  const data = join(dir, 'data');
  let spawned: SpawnedProcess | undefined;
  try {
    if (isRoot) {
      const { uid, gid } = postgresUserIds();
      chownSync(dir, uid, gid);
    }
    const [initCommand, initArgs] = asServerUser(binaries.initdb, [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '--no-sync',
      '--no-instructions',
    ]);
    await run(initCommand, initArgs, { timeout: readyTimeoutMs });
    const port = await freePort();
    const [command, args] = asServerUser(binaries.postgres, [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
    ]);
    spawned = spawnProcess(command, args, { name: `postgres :${port}` });
    await spawned.waitForOutput(/database system is ready to accept connections/, readyTimeoutMs);
    const server = spawned;
    startWatchdog(server.pid, dir);
    let stopped: Promise<void> | undefined;
    return {
      port,
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      pid: server.pid,
      process: server,
      kill(signal) {
        const backends = wholeServerSignals.has(signal) && !server.hasExited() ? childrenOf(server.pid) : [];
        // Postmaster first for SIGSTOP, so it cannot fork new backends while we stop the others.
        server.kill(signal);
        for (const backend of backends) {
          try {
            process.kill(backend, signal);
          } catch {
            // Exited in the meantime.
          }
        }
      },
      stop() {
        stopped ??= (async () => {
          server.kill('SIGCONT');
          // SIGINT is PostgreSQL's fast shutdown: it does not wait for clients to disconnect.
          server.kill('SIGINT');
          const timer = setTimeout(() => server.kill('SIGKILL'), 5_000);
          await server.exited;
          clearTimeout(timer);
          rmSync(dir, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  } catch (error) {
    if (spawned) await spawned.stop(1_000);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

let shared: Promise<string | undefined> | undefined;

/**
 * The database every PostgreSQL test shares: `DATABASE_URL` when set, else a private server
 * (stopped at process exit), else `undefined` after printing why, so the suite skips. With
 * `RESIL_REQUIRE_SERVICES=1` a missing database throws instead of skipping.
 */
export function databaseUrlForTests(): Promise<string | undefined> {
  shared ??= sharedServiceUrl({
    name: 'PostgreSQL',
    urlVariable: 'DATABASE_URL',
    binary: 'postgres',
    missing: () =>
      findBinaries() === undefined ? 'postgres is not on PATH nor in /usr/lib/postgresql' : undefined,
    start: async () => {
      const server = await startPostgresServer();
      process.once('beforeExit', () => void server.stop());
      return server.url;
    },
  });
  return shared;
}

/** A schema name unique to this test file and run: `resil_test_<label>_<random>`. */
export function uniqueSchemaName(label: string): string {
  const safeLabel = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 20);
  return `resil_test_${safeLabel}_${randomBytes(5).toString('hex')}`;
}

/** Whether the `postgres` binary can be found (for suites that start their own server). */
export function postgresServerAvailable(): boolean {
  return findBinaries() !== undefined;
}

/**
 * The backends holding advisory locks of `waiterLockClass` (a store's waiter locks, see
 * `resolveTables`): the store's listening client while someone waits, else none.
 */
export async function waiterLockBackends(
  pool: { query<R extends object>(sql: string, values: unknown[]): Promise<{ rows: R[] }> },
  waiterLockClass: number,
): Promise<number[]> {
  const result = await pool.query<{ pid: number }>(
    "SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::int::oid AND objsubid = 2",
    [waiterLockClass],
  );
  return result.rows.map((row) => row.pid);
}
