/**
 * Redis servers for tests.
 *
 * - `redisUrlForTests()`: the shared server (REDIS_URL, else a private `redis-server` from PATH),
 *   or `undefined` with a printed reason so the suite skips; with RESIL_REQUIRE_SERVICES=1 a
 *   missing server fails instead.
 * - `startRedisServer()`, `startRedisSentinel()`, `startRedisCluster()`: private servers on free
 *   loopback ports for fault tests. Each stops only the pid it started, and everything started
 *   here is killed when the test process exits.
 *
 * @example
 * const redisUrl = await redisUrlForTests();
 * describe.skipIf(!redisUrl)('my store', () => { ... });
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Cluster, Redis } from 'ioredis';
import { commandExists, freePort, type SpawnedProcess, spawnProcess, waitUntil } from './processes.ts';
import { sharedServiceUrl, skipOrFail } from './services.ts';

const run = promisify(execFile);

export interface RedisServer {
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly pid: number;
  readonly process: SpawnedProcess;
  /** Stops this server (SIGCONT first, in case it is paused) and waits until it has exited. */
  stop(): Promise<void>;
  /** Sends `signal` to this server's pid only. */
  kill(signal: NodeJS.Signals): void;
}

export interface StartRedisServerOptions {
  /** Port to listen on; a free one by default (pass the old port to "restart" a server). */
  port?: number;
  /** Extra arguments, e.g. `['--enable-debug-command', 'local']` or `['--replicaof', '127.0.0.1', '6390']`. */
  args?: readonly string[];
  /** How long to wait for "Ready to accept connections". Defaults to 10 s. */
  readyTimeoutMs?: number;
}

let sharedUrl: Promise<string | undefined> | undefined;

/**
 * The Redis every store test shares: `REDIS_URL` when set, else a private `redis-server` started
 * from PATH (stopped at process exit), else `undefined` after printing why, so the suite skips.
 * With `RESIL_REQUIRE_SERVICES=1` a missing server throws instead of skipping.
 */
export function redisUrlForTests(): Promise<string | undefined> {
  sharedUrl ??= sharedServiceUrl({
    name: 'Redis',
    urlVariable: 'REDIS_URL',
    binary: 'redis-server',
    missing: () => (redisServerAvailable() ? undefined : 'redis-server is not on PATH'),
    start: async () => (await startRedisServer()).url,
  });
  return sharedUrl;
}

/** True when a private server can be started (fault tests skip otherwise, or fail under RESIL_REQUIRE_SERVICES=1). */
export function redisServerAvailable(): boolean {
  return commandExists('redis-server') && commandExists('redis-cli');
}

/** The reason private-server tests skip, or `undefined` when they can run. Throws under RESIL_REQUIRE_SERVICES=1. */
export function privateRedisUnavailableReason(
  binaries: readonly string[] = ['redis-server', 'redis-cli'],
): string | undefined {
  const missing = binaries.filter((binary) => !commandExists(binary));
  if (missing.length === 0) return undefined;
  const reason = `${missing.join(', ')} not on PATH`;
  skipOrFail(`Redis fault tests skipped: ${reason}.`);
  return reason;
}

/** Starts a private, non-persistent `redis-server` on a free loopback port. */
export async function startRedisServer(options: StartRedisServerOptions = {}): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const directory = mkdtempSync(join(tmpdir(), `resil-redis-${port}-`));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    directory,
    ...(options.args ?? []),
  ];
  const spawned = spawnProcess('redis-server', args, { name: `redis-server :${port}` });
  try {
    await spawned.waitForOutput(/Ready to accept connections/, options.readyTimeoutMs ?? 10_000);
  } catch (error) {
    await spawned.stop();
    rmSync(directory, { recursive: true, force: true });
    throw error;
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: spawned.pid,
    process: spawned,
    kill: (signal) => spawned.kill(signal),
    async stop() {
      await spawned.stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

export interface RedisSentinel {
  readonly port: number;
  readonly pid: number;
  readonly masterName: string;
  readonly process: SpawnedProcess;
  stop(): Promise<void>;
}

export interface StartRedisSentinelOptions {
  masterPort: number;
  masterName?: string;
  /** Defaults to 1 (a single sentinel decides). */
  quorum?: number;
  /** Defaults to 1000 ms. */
  downAfterMs?: number;
  /** Defaults to 3000 ms. */
  failoverTimeoutMs?: number;
}

/** Starts a private `redis-sentinel` monitoring the master on `masterPort`. */
export async function startRedisSentinel(options: StartRedisSentinelOptions): Promise<RedisSentinel> {
  const port = await freePort();
  const masterName = options.masterName ?? 'mymaster';
  const directory = mkdtempSync(join(tmpdir(), `resil-sentinel-${port}-`));
  const configFile = join(directory, 'sentinel.conf');
  // Sentinel rewrites its config file as it learns the topology, so it must be a file of its own.
  writeFileSync(
    configFile,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${directory}`,
      `sentinel monitor ${masterName} 127.0.0.1 ${options.masterPort} ${options.quorum ?? 1}`,
      `sentinel down-after-milliseconds ${masterName} ${options.downAfterMs ?? 1000}`,
      `sentinel failover-timeout ${masterName} ${options.failoverTimeoutMs ?? 3000}`,
      `sentinel parallel-syncs ${masterName} 1`,
      '',
    ].join('\n'),
  );
  const binary = commandExists('redis-sentinel') ? 'redis-sentinel' : 'redis-server';
  const args = binary === 'redis-sentinel' ? [configFile] : [configFile, '--sentinel'];
  const spawned = spawnProcess(binary, args, { name: `redis-sentinel :${port}` });
  try {
    await spawned.waitForOutput(/\+monitor master/, 10_000);
  } catch (error) {
    await spawned.stop();
    rmSync(directory, { recursive: true, force: true });
    throw error;
  }
  return {
    port,
    pid: spawned.pid,
    masterName,
    process: spawned,
    async stop() {
      await spawned.stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** What a sentinel knows of a master: `SENTINEL MASTER` and `SENTINEL REPLICAS`, as field maps. */
export interface SentinelView {
  /** e.g. `{ ip, port, flags: 'master', 'num-other-sentinels': '2', ... }` */
  readonly master: Record<string, string>;
  /** One per replica, e.g. `{ port, flags: 'slave', 'master-link-status': 'ok', 'master-port', ... }` */
  readonly replicas: ReadonlyArray<Record<string, string>>;
}

/** Asks the sentinel `client` is connected to what it knows of `masterName`. */
export async function sentinelView(client: Redis, masterName: string): Promise<SentinelView> {
  const [master, replicas] = await Promise.all([
    client.call('SENTINEL', 'MASTER', masterName) as Promise<string[]>,
    client.call('SENTINEL', 'REPLICAS', masterName) as Promise<string[][]>,
  ]);
  return { master: fieldMap(master), replicas: replicas.map(fieldMap) };
}

/** `[name, value, name, value, ...]` as an object. */
function fieldMap(fields: readonly string[]): Record<string, string> {
  const map: Record<string, string> = {};
  for (let index = 0; index + 1 < fields.length; index += 2) map[fields[index]!] = fields[index + 1]!;
  return map;
}

export interface RedisClusterServers {
  readonly nodes: readonly RedisServer[];
  /** `[{ host, port }]` for `new Cluster(startupNodes)`. */
  readonly startupNodes: Array<{ host: string; port: number }>;
  /**
   * With `persistent`: stops every node, and once `downMs` has passed starts each again on its
   * port with its data (AOF and cluster config), then waits for `cluster_state:ok`.
   */
  restart(downMs: number, onDown?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts `masters` (default 3) `redis-server --cluster-enabled yes` nodes on free ports, joins them
 * with `redis-cli --cluster create ... --cluster-yes` and waits until every node reports
 * `cluster_state:ok`. With `persistent`, each node keeps an AOF and its cluster config in a
 * folder of its own until `stop()`, so that `restart()` brings the same cluster back with its data.
 */
export async function startRedisCluster({
  masters = 3,
  persistent = false,
}: {
  masters?: number;
  persistent?: boolean;
} = {}): Promise<RedisClusterServers> {
  const nodes: RedisServer[] = [];
  const directories: string[] = [];
  const argsOf = (index: number) => [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--cluster-node-timeout',
    '2000',
    ...(persistent ? ['--appendonly', 'yes', '--dir', directories[index]!] : []),
  ];
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  };
  const clusterOk = () =>
    waitUntil(
      'cluster_state:ok on every node',
      async () => {
        for (const node of nodes) {
          const { stdout } = await run('redis-cli', ['-p', String(node.port), 'cluster', 'info'], {
            timeout: 2_000,
          });
          if (!stdout.includes('cluster_state:ok')) return false;
        }
        return true;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
  try {
    for (let index = 0; index < masters; index++) {
      if (persistent) directories.push(mkdtempSync(join(tmpdir(), 'resil-cluster-node-')));
      nodes.push(await startRedisServer({ args: argsOf(index) }));
    }
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { timeout: 20_000 },
    );
    await clusterOk();
  } catch (error) {
    await stop();
    throw error;
  }
  const restart = async (downMs: number, onDown?: () => Promise<void>) => {
    if (!persistent) throw new Error('restart() needs a cluster started with persistent: true');
    await Promise.all(nodes.map((node) => node.stop()));
    await onDown?.();
    await new Promise((resolve) => setTimeout(resolve, downMs));
    for (const [index, node] of nodes.entries()) {
      nodes[index] = await startRedisServer({ port: node.port, args: argsOf(index) });
    }
    await clusterOk();
  };
  return {
    nodes,
    startupNodes: nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
    restart,
    stop,
  };
}

/** A key prefix no other test (or test run) shares: `resil-test:<name>:<random>:`. */
export function uniquePrefix(name: string): string {
  return `resil-test:${name}:${randomBytes(4).toString('hex')}:`;
}

/** Deletes every key under `prefix` (SCAN, so it is safe on a shared server; every master of a Cluster). */
export async function deleteKeys(client: Redis | Cluster, prefix: string): Promise<void> {
  const masters =
    'nodes' in client && typeof client.nodes === 'function' ? client.nodes('master') : [client as Redis];
  for (const node of masters) {
    const keys = await scanKeys(node, `${prefix}*`);
    // One DEL per key: in a Cluster the keys of one node may still span slots.
    for (const key of keys) await node.del(key);
  }
}

/** Every key matching `pattern` on one server, by SCAN. */
export async function scanKeys(client: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys.sort();
}
