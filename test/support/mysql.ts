/**
 * MySQL / MariaDB servers for tests.
 *
 * - `mysqlUrlForTests()`: the shared database (MYSQL_URL, else a private `mariadbd` from PATH or
 *   /usr/sbin), or `undefined` with a printed reason so the suite skips; with
 *   RESIL_REQUIRE_SERVICES=1 a missing database fails instead.
 * - `startMysqlServer()`: a private MariaDB on a free loopback port in a temp dir, for fault tests
 *   (stop it, SIGSTOP it, kill -9 it, start it again on the same data). It signals only the pid it
 *   started.
 * - `uniqueTableName(label)`: a table name no other test file or run uses (CI shares one database).
 *
 * @example
 * const mysqlUrl = await mysqlUrlForTests();
 * describe.skipIf(!mysqlUrl)('my store', () => { ... });
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, type SpawnedProcess, spawnProcess } from './processes.ts';
import { sharedServiceUrl } from './services.ts';

const run = promisify(execFile);

export interface MysqlServer {
  readonly port: number;
  /** `mysql://root@127.0.0.1:<port>/test` (root without a password). */
  readonly url: string;
  readonly pid: number;
  readonly process: SpawnedProcess;
  /** The data directory: give it to `startMysqlServer` to start the server again on its data. */
  readonly dataDirectory: string;
  /**
   * Shuts this server down (SIGCONT first, in case it is paused; SIGTERM is a clean shutdown) and
   * waits for it to exit; removes its directory unless `keepData`.
   */
  stop(options?: { keepData?: boolean }): Promise<void>;
  /** Sends `signal` to this server's pid (mariadbd is one process: SIGSTOP stalls all of it). */
  kill(signal: NodeJS.Signals): void;
}

export interface StartMysqlServerOptions {
  /** Port to listen on; a free one by default (pass the old port to restart a server). */
  port?: number;
  /** Start on this data directory (a stopped server's) instead of initialising a new one. */
  dataDirectory?: string;
  /** How long to wait for initialisation plus start-up. Defaults to 20 s. */
  readyTimeoutMs?: number;
}

/** `mariadbd` (or `mysqld`), `mariadb-install-db` and the `mariadb` client, from PATH or /usr/sbin and /usr/bin. */
function findBinaries(): { server: string; install: string; client: string } | undefined {
  const directories = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/bin'].filter(Boolean);
  const find = (names: string[]) => {
    for (const name of names) {
      for (const directory of directories) {
        if (existsSync(join(directory, name))) return join(directory, name);
      }
    }
    return undefined;
  };
  const server = find(['mariadbd', 'mysqld']);
  const install = find(['mariadb-install-db', 'mysql_install_db']);
  const client = find(['mariadb', 'mysql']);
  if (server === undefined || install === undefined || client === undefined) return undefined;
  return { server, install, client };
}

/** Whether a private server can be started (for suites that start their own). */
export function mysqlServerAvailable(): boolean {
  return findBinaries() !== undefined;
}

// Small and quick: the tests keep little data. The defaults are kept where they matter to what
// the tests show (a committed transaction survives a crash: innodb_flush_log_at_trx_commit=1).
const serverArguments = [
  '--skip-name-resolve',
  '--innodb-buffer-pool-size=32M',
  '--innodb-log-file-size=8M',
  '--skip-log-bin',
];

// Runs detached beside each server: when the test process dies without stopping it (a vitest
// worker is killed, say), it stops the server and removes its directory.
// argv: parent pid, server pid, directory.
const watchdogScript = `
const [parent, server] = process.argv.slice(1, 3).map(Number);
const dir = process.argv[3];
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
const timer = setInterval(() => {
  if (!alive(server)) { clearInterval(timer); return; }
  if (alive(parent)) return;
  clearInterval(timer);
  try { process.kill(server, 'SIGCONT'); process.kill(server, 'SIGKILL'); } catch {}
  setTimeout(() => require('node:fs').rmSync(dir, { recursive: true, force: true }), 500);
}, 250);
`;

/**
 * Starts a private MariaDB (about 1 s: mariadb-install-db, then mariadbd) on a free loopback port,
 * root without a password, with a database `test`. Stop it with `stop()`; it is also killed when
 * the test process exits.
 */
export async function startMysqlServer(options: StartMysqlServerOptions = {}): Promise<MysqlServer> {
  const binaries = findBinaries();
  if (binaries === undefined)
    throw new Error('mariadbd/mariadb-install-db not found on PATH or in /usr/sbin');
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  const directory = options.dataDirectory ?? mkdtempSync(join(tmpdir(), 'resil-mysql-'));
  const data = join(directory, 'data');
  // Only root may run the server as root (--user=root); anyone else runs it as themselves.
  const user = process.getuid?.() === 0 ? ['--user=root'] : [];
  let spawned: SpawnedProcess | undefined;
  try {
    const fresh = !existsSync(data);
    if (fresh) {
      await run(
        binaries.install,
        [
          '--no-defaults',
          `--datadir=${data}`,
          ...user,
          '--auth-root-authentication-method=normal',
          '--skip-test-db',
          ...serverArguments,
        ],
        { timeout: readyTimeoutMs },
      );
    }
    const port = options.port ?? (await freePort());
    spawned = spawnProcess(
      binaries.server,
      [
        '--no-defaults',
        `--datadir=${data}`,
        ...user,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--socket=${join(directory, 'sock')}`,
        `--pid-file=${join(directory, 'pid')}`,
        ...serverArguments,
      ],
      { name: `mariadbd :${port}` },
    );
    await spawned.waitForOutput(/ready for connections/, readyTimeoutMs);
    if (fresh) {
      await run(binaries.client, [
        '--no-defaults',
        `--socket=${join(directory, 'sock')}`,
        '-u',
        'root',
        '-e',
        'CREATE DATABASE IF NOT EXISTS test',
      ]);
    }
    const server = spawned;
    const watchdog = spawn(
      process.execPath,
      ['-e', watchdogScript, String(process.pid), String(server.pid), directory],
      { detached: true, stdio: 'ignore' },
    );
    watchdog.unref();
    let stopped: Promise<void> | undefined;
    return {
      port,
      url: `mysql://root@127.0.0.1:${port}/test`,
      pid: server.pid,
      process: server,
      dataDirectory: directory,
      kill: (signal) => server.kill(signal),
      stop({ keepData = false } = {}) {
        stopped ??= (async () => {
          server.kill('SIGCONT');
          server.kill('SIGTERM');
          const timer = setTimeout(() => server.kill('SIGKILL'), 10_000);
          await server.exited;
          clearTimeout(timer);
          if (!keepData) rmSync(directory, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  } catch (error) {
    if (spawned) await spawned.stop(1_000);
    if (options.dataDirectory === undefined) rmSync(directory, { recursive: true, force: true });
    throw error;
  }
}

let shared: Promise<string | undefined> | undefined;

/**
 * The database every MySQL test shares: `MYSQL_URL` when set, else a private MariaDB (stopped at
 * process exit), else `undefined` after printing why, so the suite skips. With
 * `RESIL_REQUIRE_SERVICES=1` a missing database throws instead of skipping.
 */
export function mysqlUrlForTests(): Promise<string | undefined> {
  shared ??= sharedServiceUrl({
    name: 'MySQL',
    urlVariable: 'MYSQL_URL',
    binary: 'mariadbd',
    missing: () => (mysqlServerAvailable() ? undefined : 'mariadbd is not on PATH nor in /usr/sbin'),
    start: async () => {
      const server = await startMysqlServer();
      process.once('beforeExit', () => void server.stop());
      return server.url;
    },
  });
  return shared;
}

/** A table name unique to this test file and run: `resil_test_<label>_<random>`. */
export function uniqueTableName(label: string): string {
  const safeLabel = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 20);
  return `resil_test_${safeLabel}_${randomBytes(5).toString('hex')}`;
}

/** The suffixes of the tables a `MysqlLockStore` with `table` makes (`<table><suffix>`). */
export const mysqlTableSuffixes = [
  '',
  '_occurrences',
  '_pauses',
  '_fences',
  '_instances',
  '_circuits',
  '_rate_limits',
] as const;

/** Drops every table a `MysqlLockStore` with `table` made (tests that made their own). */
export async function dropMysqlTables(
  pool: { query(sql: string): Promise<unknown> },
  table: string,
): Promise<void> {
  for (const suffix of mysqlTableSuffixes) await pool.query(`DROP TABLE IF EXISTS \`${table}${suffix}\``);
}
