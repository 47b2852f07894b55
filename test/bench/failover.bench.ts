/**
 * What a Redis failover does to RedisLockStore's leases and fencing tokens, `waitForReplicas` 0
 * and 1 side by side. Private servers on loopback: a master, a replica and three sentinels (quorum
 * 2, `down-after-milliseconds` 2000, `failover-timeout` 2000). A round: a holder takes two leases
 * (ttl 6 s; one on a key every round uses, one on a key new this round) through a sentinel-aware
 * ioredis client (`failoverDetector: true`, as docs/redis.md shows) and keeps their tokens; the
 * fault hits the master; a contender, on a client of its own (a new one if ioredis ends it, see
 * `Contender`), tries both keys every 50 ms, and a probe key nobody holds, to see when any acquire
 * works again. The faults:
 *
 * - `kill`: SIGKILL the master. Once a sentinel names the replica master, the killed server starts
 *   again, empty, on its port as a replica of it (a supervisor that asks the sentinels does that).
 * - `stop`: SIGSTOP the master until every sentinel names the replica master, then SIGCONT: it is
 *   a stale master until the sentinels turn it into a replica of the new one.
 * - `kill-behind`: `kill`, with the replica behind: frozen (SIGSTOP) for the holder's acquires,
 *   with a few MB of replication stream waiting on the master (see `putReplicaBehind`), and resumed
 *   as the master dies, or as soon as an acquire is refused for want of it (`waitForReplicas: 1`).
 *   Asynchronous replication always has that window; on loopback, where the replica gets a write
 *   within a millisecond, a fault never hits it by chance, so this fault opens it on purpose.
 *
 * Per cell: rounds where the contender got the lease while the holder still believed in it (by
 * its own reckoning: ttl from just before it sent the acquire), rounds where a token handed out
 * after the fault was not above every token handed out before on that key (the keys in use, and
 * apart from them the new key, whose counter only the failed master had), and, from the fault:
 * when a sentinel named the new master, when the probe key's first acquire worked, when the
 * contender got the held key. Cells take turns, round by round, so drift hits them alike; each
 * round starts once the replica is in sync and every sentinel knows it and the two others.
 *
 * `npm run bench -- failover` (about 6 minutes): BENCH_FAILOVER_ROUNDS (default 5) rounds per
 * cell, BENCH_FAILOVER_FAULTS (a comma-separated list of kill, stop, kill-behind; all by
 * default), BENCH_FAILOVER_DOWN_AFTER_MS (default 2000). The smoke run is one `kill` round with
 * `waitForReplicas: 0`. It skips, saying why, without redis-server, redis-cli or redis-sentinel on
 * PATH.
 */
import { Redis } from 'ioredis';
import { isStoreUnavailableError } from '../../src/index.ts';
import { RedisLockStore, type RedisLockStoreOptions } from '../../src/stores/redis/index.ts';
import { commandExists, waitUntil } from '../support/processes.ts';
import {
  type RedisSentinel,
  type RedisServer,
  sentinelView,
  startRedisSentinel,
  startRedisServer,
} from '../support/redis.ts';
import { skipOrFail } from '../support/services.ts';
import { type BenchOptions, median, printTable } from './harness.ts';

const masterName = 'mymaster';
const sentinelCount = 3;
const quorum = 2;
/**
 * Sentinel's `down-after-milliseconds`. Not 1000: a sentinel that has just switched masters
 * connects to the new one at most once a second, so at 1000 ms it may find the new master down
 * before its first PING is answered and fail over again, to a replica that may not have synced
 * yet. The table's last line counts such rounds (BENCH_FAILOVER_DOWN_AFTER_MS=1000 shows them).
 */
const downAfterMs = Number(process.env.BENCH_FAILOVER_DOWN_AFTER_MS ?? 2_000);
const failoverTimeoutMs = 2_000;
/** Long enough that a contender who gets a lost lease right after the failover is seen doing so. */
const ttlMs = 6_000;
const commandTimeout = 500;
const replicaTimeout = 250;
const attemptPauseMs = 50;
/** From the fault: a round whose acquires have not worked by then counts as such. */
const roundBoundMs = 40_000;
const heldKey = 'nightly-report';
const probeKey = 'probe';

type FaultName = 'kill' | 'stop' | 'kill-behind';

const faultLabels: Record<FaultName, string> = {
  kill: 'master killed (SIGKILL)',
  stop: 'master frozen (SIGSTOP), SIGCONT after the promotion',
  'kill-behind': 'master killed, replica behind',
};

interface Cell {
  readonly fault: FaultName;
  readonly waitForReplicas: 0 | 1;
  /** The keys of a cell live on from round to round, so their counters are on both servers. */
  readonly prefix: string;
  /** Highest token handed out so far, per key. */
  readonly highest: Map<string, number>;
  readonly rounds: RoundResult[];
}

interface RoundResult {
  /** How long both believed in the lease, in ms; undefined when they never did at once. */
  overlapMs: number | undefined;
  /**
   * A token handed out after the fault was <= one handed out before it on the same key (the held
   * key or the probe: keys whose counters both servers had).
   */
  tokenNotAbove: boolean;
  /** The same for a key new in this round, whose counter only the failed master had (if that). */
  freshTokenNotAbove: boolean;
  /** Holder's acquires refused (StoreUnavailableError) before one worked. */
  holderRefused: number;
  /** From the fault, in ms; undefined when it did not happen within the round's bound. */
  promotedMs: number | undefined;
  probeMs: number | undefined;
  takenOverMs: number | undefined;
  /** Why the contender's last attempt failed, when one of its keys was never acquired. */
  lastError: string | undefined;
  /** The contender's ioredis client ended for good during the round, after this error (it went on with a new one). */
  clientEndedAfter: string | undefined;
  /** The sentinels failed over once more, on their own, before the next round could start. */
  failedOverAgain: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ignore = () => {};

export default async function failoverBench(options: BenchOptions): Promise<void> {
  const missing = ['redis-server', 'redis-cli', 'redis-sentinel'].filter((binary) => !commandExists(binary));
  if (missing.length > 0) {
    skipOrFail(`failover bench skipped: ${missing.join(', ')} not on PATH.`);
    return;
  }
  const rounds = options.smoke ? 1 : Number(process.env.BENCH_FAILOVER_ROUNDS ?? 5);
  if (!Number.isSafeInteger(rounds) || rounds < 1) {
    throw new Error(`BENCH_FAILOVER_ROUNDS must be a whole number >= 1, not ${rounds}`);
  }
  const faults = options.smoke ? ['kill' as const] : faultsToRun();
  const cells: Cell[] = [];
  for (const fault of faults) {
    for (const waitForReplicas of options.smoke ? [0 as const] : [0 as const, 1 as const]) {
      cells.push({
        fault,
        waitForReplicas,
        prefix: `failover:${fault}:${waitForReplicas}:`,
        highest: new Map(),
        rounds: [],
      });
    }
  }

  const topology = await Topology.start();
  try {
    await topology.waitUntilHealthy();
    for (let round = 1; round <= rounds; round++) {
      for (const cell of cells) {
        const result = await runRound(topology, cell);
        // A failover the round did not cause shows up as the sentinels naming another master. (The
        // smoke run has no next round to wait for.)
        result.failedOverAgain = !options.smoke && (await topology.waitUntilHealthy());
        cell.rounds.push(result);
        console.log(
          `round ${round}/${rounds}, ${cell.fault}, waitForReplicas ${cell.waitForReplicas}: ${describeRound(result)}`,
        );
      }
    }
  } finally {
    await topology.stop();
  }

  printTable(
    `Redis failover: a lease (ttl ${ttlMs / 1000} s) held when the master fails, down-after-milliseconds ${downAfterMs}, ${rounds} round${rounds === 1 ? '' : 's'} per row${options.smoke ? ' (smoke run: figures are meaningless)' : ''}`,
    [
      'fault',
      'waitForReplicas',
      'two holders at once',
      'longest overlap',
      'token not above an earlier one',
      'same, on a new key',
      'new master named after, p50 / max',
      'any acquire works again after, p50 / max',
      'held key taken over after, p50 / max',
      "holder's acquire refused first",
      "contender's client ended (a new one went on)",
    ],
    cells.map((cell) => {
      const overlaps = cell.rounds.flatMap((round) =>
        round.overlapMs === undefined ? [] : [round.overlapMs],
      );
      return [
        faultLabels[cell.fault],
        String(cell.waitForReplicas),
        `${overlaps.length} of ${cell.rounds.length}`,
        overlaps.length === 0 ? '-' : seconds(Math.max(...overlaps)),
        `${cell.rounds.filter((round) => round.tokenNotAbove).length} of ${cell.rounds.length}`,
        `${cell.rounds.filter((round) => round.freshTokenNotAbove).length} of ${cell.rounds.length}`,
        spread(cell.rounds.map((round) => round.promotedMs)),
        spread(cell.rounds.map((round) => round.probeMs)),
        spread(cell.rounds.map((round) => round.takenOverMs)),
        `${cell.rounds.filter((round) => round.holderRefused > 0).length} of ${cell.rounds.length}`,
        `${cell.rounds.filter((round) => round.clientEndedAfter !== undefined).length} of ${cell.rounds.length}`,
      ];
    }),
  );
  const again = cells.flatMap((cell) => cell.rounds.filter((round) => round.failedOverAgain));
  if (again.length > 0) {
    console.log(`After ${again.length} of the rounds, the sentinels failed over once more on their own.\n`);
  }
}

function faultsToRun(): FaultName[] {
  const names = (process.env.BENCH_FAILOVER_FAULTS ?? 'kill,stop,kill-behind')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
  for (const name of names) {
    if (!(name in faultLabels)) {
      throw new Error(`BENCH_FAILOVER_FAULTS: unknown fault ${name} (kill, stop, kill-behind)`);
    }
  }
  return names as FaultName[];
}

/**
 * One round on `cell`: the holder's leases, the fault, the contender and the probe until they got
 * their keys (or the bound ran out), the failed master back as a replica.
 */
async function runRound(topology: Topology, cell: Cell): Promise<RoundResult> {
  const storeOptions = {
    prefix: cell.prefix,
    commandTimeout,
    replicaTimeout,
    waitForReplicas: cell.waitForReplicas,
  };
  const holderClient = topology.client();
  const holder = new RedisLockStore(holderClient, storeOptions);
  const contender = new Contender(topology, storeOptions);
  const oldMaster = topology.masterPort;
  const replica = topology.replicaPort;
  const freshKey = `fresh-${cell.rounds.length + 1}`;
  let masterStopped = false;
  let replicaStopped = false;
  const resumeReplica = () => {
    if (replicaStopped) topology.server(replica).kill('SIGCONT');
    replicaStopped = false;
  };
  try {
    await waitUntil(
      'the holder and the contender to connect',
      () => holderClient.status === 'ready' && contender.store.client.status === 'ready',
      { timeoutMs: 5_000, intervalMs: 10 },
    );
    // Without them, a client stays on a frozen master: the fault must not come first.
    await topology.waitForDetectors(2);

    // Every round alike: the counters of the keys in use are on both servers before the fault.
    for (const key of [heldKey, probeKey]) {
      const token = await contender.store.acquire(key, 'warm-up', ttlMs);
      if (token === undefined) throw new Error(`${cell.prefix}${key} was held before the round`);
      record(cell, key, token);
      await contender.store.release(key, 'warm-up');
    }

    if (cell.fault === 'kill-behind') {
      replicaStopped = true;
      await topology.putReplicaBehind();
    }
    let holderRefused = 0;
    const hold = async (key: string) => {
      const giveUpAt = performance.now() + 10_000;
      for (;;) {
        const sentAt = performance.now();
        try {
          const token = await holder.acquire(key, 'holder', ttlMs);
          if (token === undefined) throw new Error(`${cell.prefix}${key} was held before the round`);
          return { sentAt, token };
        } catch (error) {
          if (!isStoreUnavailableError(error) || performance.now() > giveUpAt) throw error;
          holderRefused++;
          // A replica does not stay behind for ever: once the acquire has been refused, it catches up.
          resumeReplica();
          await sleep(attemptPauseMs);
        }
      }
    };
    const [held, fresh] = await Promise.all([hold(heldKey), hold(freshKey)]);
    record(cell, heldKey, held.token);
    const highestBefore = new Map(cell.highest);

    const faultAt = performance.now();
    masterStopped = cell.fault === 'stop';
    topology.server(oldMaster).kill(masterStopped ? 'SIGSTOP' : 'SIGKILL');
    resumeReplica();
    const deadline = faultAt + roundBoundMs;
    const promotion = (async () => {
      const promoted = await topology.waitForPromotion(oldMaster, 'any', deadline);
      if (promoted === undefined) return undefined;
      if (masterStopped) {
        await topology.waitForPromotion(oldMaster, 'every', deadline);
        topology.server(oldMaster).kill('SIGCONT');
        masterStopped = false;
      } else {
        await topology.restartAsReplica(oldMaster, promoted.port);
      }
      return promoted;
    })();
    const [promoted, takenOver, freshTakenOver, probed] = await Promise.all([
      promotion,
      acquireWhenFree(contender, heldKey, 'contender', deadline),
      acquireWhenFree(contender, freshKey, 'contender', deadline),
      acquireWhenFree(contender, probeKey, 'probe', deadline),
    ]);
    if (promoted === undefined) throw new Error(`no sentinel promoted the replica within ${roundBoundMs} ms`);
    topology.masterPort = promoted.port;

    let tokenNotAbove = false;
    for (const [key, outcome] of [
      [heldKey, takenOver],
      [probeKey, probed],
    ] as const) {
      if (outcome.at === undefined) continue;
      if (outcome.token <= (highestBefore.get(key) ?? 0)) tokenNotAbove = true;
      record(cell, key, outcome.token);
    }
    const believedUntil = held.sentAt + ttlMs;
    await Promise.all([
      takenOver.at !== undefined && contender.store.release(heldKey, 'contender'),
      freshTakenOver.at !== undefined && contender.store.release(freshKey, 'contender'),
      probed.at !== undefined && contender.store.release(probeKey, 'probe'),
    ]);
    const since = (outcome: Outcome) => (outcome.at === undefined ? undefined : outcome.at - faultAt);
    return {
      overlapMs:
        takenOver.at !== undefined && takenOver.at < believedUntil ? believedUntil - takenOver.at : undefined,
      tokenNotAbove,
      freshTokenNotAbove: freshTakenOver.at !== undefined && freshTakenOver.token <= fresh.token,
      holderRefused,
      promotedMs: promoted.at - faultAt,
      probeMs: since(probed),
      takenOverMs: since(takenOver),
      lastError: [takenOver, freshTakenOver, probed].find((outcome) => outcome.at === undefined)?.lastError,
      clientEndedAfter: contender.ended[0],
      failedOverAgain: false,
    };
  } finally {
    resumeReplica();
    if (masterStopped) topology.server(oldMaster).kill('SIGCONT');
    await Promise.all([holder.close(), contender.close()]);
    holderClient.disconnect();
  }
}

/**
 * The contender's store, on a client of its own. ioredis can end a client for good during a
 * failover (status "end": it stops reconnecting, and every store operation fails at once); the
 * contender then goes on with a new client, as an application that watches for `'end'` would, and
 * keeps the error the ended client reported last.
 */
class Contender {
  store: RedisLockStore;
  /** For each client that ended, the last error it reported. */
  readonly ended: string[] = [];
  readonly #topology: Topology;
  readonly #options: RedisLockStoreOptions;
  readonly #clients: Redis[] = [];
  #closing = false;

  constructor(topology: Topology, options: RedisLockStoreOptions) {
    this.#topology = topology;
    this.#options = options;
    this.store = this.#connect();
  }

  #connect(): RedisLockStore {
    const client = this.#topology.client();
    this.#clients.push(client);
    let lastError = 'none';
    client.on('error', (error: Error) => {
      lastError = error.message;
    });
    client.on('end', () => {
      if (this.#closing) return;
      this.ended.push(lastError);
      this.store = this.#connect();
    });
    return new RedisLockStore(client, this.#options);
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.store.close();
    for (const client of this.#clients) client.disconnect();
  }
}

/** When an acquire worked (its reply, `performance.now()`) and its token; or why none did. */
type Outcome = { at: number; token: number; lastError?: undefined } | { at: undefined; lastError: string };

/** Tries `key` every 50 ms until it is acquired (when the reply came, and the token) or `deadline` passes. */
async function acquireWhenFree(
  contender: Contender,
  key: string,
  owner: string,
  deadline: number,
): Promise<Outcome> {
  let lastError = 'the lease was held';
  while (performance.now() < deadline) {
    try {
      const token = await contender.store.acquire(key, owner, ttlMs);
      if (token !== undefined) return { at: performance.now(), token };
      lastError = 'the lease was held';
    } catch (error) {
      if (!isStoreUnavailableError(error)) throw error;
      lastError = error.message;
    }
    await sleep(attemptPauseMs);
  }
  return { at: undefined, lastError };
}

function record(cell: Cell, key: string, token: number): void {
  cell.highest.set(key, Math.max(cell.highest.get(key) ?? 0, token));
}

/** The master, its replica and the sentinels, and which server is master now. */
class Topology {
  readonly #servers = new Map<number, RedisServer>();
  readonly #sentinels: RedisSentinel[];
  readonly #sentinelClients: Redis[];
  masterPort: number;
  /** When a sentinel last named a new master (`performance.now()`). */
  #lastPromotionAt = Number.NEGATIVE_INFINITY;

  private constructor(servers: RedisServer[], sentinels: RedisSentinel[]) {
    for (const server of servers) this.#servers.set(server.port, server);
    this.masterPort = servers[0]!.port;
    this.#sentinels = sentinels;
    this.#sentinelClients = sentinels.map((sentinel) => {
      const client = new Redis({ host: '127.0.0.1', port: sentinel.port });
      client.on('error', ignore);
      return client;
    });
  }

  static async start(): Promise<Topology> {
    const servers: RedisServer[] = [];
    const sentinels: RedisSentinel[] = [];
    try {
      const master = await startRedisServer();
      servers.push(master);
      servers.push(await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(master.port)] }));
      // A replica in sync before the sentinels start is in the master's first INFO reply, so they
      // know it at once instead of at their next INFO, 10 s later.
      await waitUntil(
        'the replica to sync',
        async () =>
          String(await ask(servers[1]!.port, 'INFO', 'replication')).includes('master_link_status:up'),
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      for (let index = 0; index < sentinelCount; index++) {
        sentinels.push(
          await startRedisSentinel({
            masterPort: master.port,
            masterName,
            quorum,
            downAfterMs,
            failoverTimeoutMs,
          }),
        );
      }
    } catch (error) {
      await Promise.all([...sentinels, ...servers].map((each) => each.stop()));
      throw error;
    }
    return new Topology(servers, sentinels);
  }

  get replicaPort(): number {
    for (const port of this.#servers.keys()) if (port !== this.masterPort) return port;
    throw new Error('no replica');
  }

  server(port: number): RedisServer {
    const server = this.#servers.get(port);
    if (server === undefined) throw new Error(`no server on port ${port}`);
    return server;
  }

  /** A client of the master the sentinels name, that leaves a hung master when they promote another. */
  client(): Redis {
    const client = new Redis({
      sentinels: this.#sentinels.map((sentinel) => ({ host: '127.0.0.1', port: sentinel.port })),
      name: masterName,
      failoverDetector: true,
      retryStrategy: () => 100,
    });
    // Errors are expected here (refused connections, a closed socket): the figures say what they cost.
    client.on('error', ignore);
    return client;
  }

  /** Waits until every sentinel has `count` subscribers (the clients' failover detectors). */
  async waitForDetectors(count: number): Promise<void> {
    await waitUntil(
      `${count} failover detectors on every sentinel`,
      async () => {
        for (const sentinel of this.#sentinelClients) {
          const clients = String(await sentinel.call('CLIENT', 'LIST'));
          if ((clients.match(/ sub=[1-9]/g) ?? []).length !== count) return false;
        }
        return true;
      },
      { timeoutMs: 5_000, intervalMs: 10 },
    );
  }

  /**
   * When the first sentinel (`any`) or the last one (`every`) names a master other than
   * `oldMaster`, and which; undefined if none does by `deadline`.
   */
  async waitForPromotion(
    oldMaster: number,
    which: 'any' | 'every',
    deadline: number,
  ): Promise<{ at: number; port: number } | undefined> {
    while (performance.now() < deadline) {
      const named = await Promise.all(
        this.#sentinelClients.map((sentinel) => masterNamedBy(sentinel).catch(() => Number.NaN)),
      );
      const moved = named.filter((port) => port !== oldMaster && this.#servers.has(port));
      if (which === 'any' ? moved.length > 0 : moved.length === named.length) {
        const at = performance.now();
        if (which === 'any') this.#lastPromotionAt = at;
        return { at, port: moved[0]! };
      }
      await sleep(20);
    }
    return undefined;
  }

  /**
   * Puts the replica behind: freezes it (SIGSTOP; the caller resumes it) and writes 1 MB values
   * (expiring in 5 s) to the master until some of the replication stream waits in the master's
   * own memory (`omem` of the replica's connection), the sockets' buffers being full: whatever
   * the master writes next is not on the replica's side when the master dies.
   */
  async putReplicaBehind(): Promise<void> {
    this.server(this.replicaPort).kill('SIGSTOP');
    for (let megabytes = 1; megabytes <= 32; megabytes++) {
      await ask(this.masterPort, 'SET', `failover-filler:${megabytes}`, filler(), 'PX', '5000');
      const replicas = String(await ask(this.masterPort, 'CLIENT', 'LIST', 'TYPE', 'replica'));
      if (Number(/ omem=(\d+)/.exec(replicas)?.[1] ?? 0) >= 256 * 1024) return;
    }
    throw new Error('32 MB written to the master and none of it waits for the frozen replica');
  }

  /** Starts the server on `port` again, empty, as a replica of `masterPort`. */
  async restartAsReplica(port: number, masterPort: number): Promise<void> {
    await this.server(port).stop();
    this.#servers.set(
      port,
      await startRedisServer({ port, args: ['--replicaof', '127.0.0.1', String(masterPort)] }),
    );
  }

  /**
   * Waits until a failover can happen as in the first round: every sentinel naming the same
   * master, knowing the replica in sync with it and the two other sentinels, and past the time a
   * sentinel that just failed over (or voted) waits before it may fail over again (2 x
   * failover-timeout, plus up to 1 s that Sentinel adds at random). True when the master they name
   * is not the one the last round left: they failed over again on their own.
   */
  async waitUntilHealthy(): Promise<boolean> {
    const expected = this.masterPort;
    let problem: string | undefined = 'not asked yet';
    try {
      await waitUntil(
        'the master, the replica and the sentinels to settle',
        async () => {
          problem = await this.#problem().catch((error: Error) => error.message);
          return problem === undefined;
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
    } catch (error) {
      const logs = [...this.#sentinels, ...this.#servers.values()].map(
        (each) =>
          `${each.process.child.spawnfile} :${each.port}\n${each.process.output().split('\n').slice(-30).join('\n')}`,
      );
      throw new Error(`${(error as Error).message}: ${problem}\n${logs.join('\n')}`);
    }
    return this.masterPort !== expected;
  }

  /** What keeps the topology from being ready for the next round, or undefined. */
  async #problem(): Promise<string | undefined> {
    const named = await Promise.all(this.#sentinelClients.map((sentinel) => masterNamedBy(sentinel)));
    if (!named.every((port) => port === named[0]) || !this.#servers.has(named[0]!)) {
      return `the sentinels name ${named.join(', ')} as master`;
    }
    if (named[0] !== this.masterPort) {
      this.masterPort = named[0]!;
      this.#lastPromotionAt = performance.now();
    }
    if (performance.now() - this.#lastPromotionAt < 2 * failoverTimeoutMs + 1_000) {
      return 'a sentinel may not fail over again yet';
    }
    const master = this.masterPort;
    const replica = this.replicaPort;
    const masterInfo = String(await ask(master, 'INFO', 'replication'));
    if (!masterInfo.includes('role:master') || !masterInfo.includes(`port=${replica},state=online`)) {
      return `master :${master}: ${masterInfo.replace(/\r?\n/g, ' ')}`;
    }
    const replicaInfo = String(await ask(replica, 'INFO', 'replication'));
    if (!replicaInfo.includes(`master_port:${master}`) || !replicaInfo.includes('master_link_status:up')) {
      return `replica :${replica}: ${replicaInfo.replace(/\r?\n/g, ' ')}`;
    }
    for (const [index, sentinel] of this.#sentinelClients.entries()) {
      const view = await sentinelView(sentinel, masterName);
      const known = view.replicas.find((each) => Number(each.port) === replica);
      if (
        view.master.flags !== 'master' ||
        Number(view.master['num-other-sentinels']) !== sentinelCount - 1 ||
        known?.flags !== 'slave' ||
        known['master-link-status'] !== 'ok' ||
        Number(known['master-port']) !== master
      ) {
        return `sentinel ${index + 1}: ${JSON.stringify(view)}`;
      }
    }
    return undefined;
  }

  async stop(): Promise<void> {
    for (const client of this.#sentinelClients) client.disconnect();
    await Promise.all(this.#sentinels.map((sentinel) => sentinel.stop()));
    await Promise.all([...this.#servers.values()].map((server) => server.stop()));
  }
}

/** The port of the master the sentinel `client` is connected to names. */
async function masterNamedBy(client: Redis): Promise<number> {
  const address = (await client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName)) as string[] | null;
  return Number(address?.[1]);
}

/** One command to the server on `port`, on a connection of its own (a failed server must not stall the next). */
async function ask(port: number, command: string, ...args: string[]): Promise<unknown> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    commandTimeout: 1_000,
  });
  client.on('error', ignore);
  try {
    await client.connect();
    return await client.call(command, ...args);
  } finally {
    client.disconnect();
  }
}

let megabyte: string | undefined;
function filler(): string {
  megabyte ??= 'x'.repeat(1024 * 1024);
  return megabyte;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** `p50 / max` in seconds, and how many rounds it never happened in. */
function spread(values: ReadonlyArray<number | undefined>): string {
  const happened = values.filter((value): value is number => value !== undefined);
  const missing = values.length - happened.length;
  const figure =
    happened.length === 0 ? '-' : `${seconds(median(happened))} / ${seconds(Math.max(...happened))}`;
  return missing === 0 ? figure : `${figure} (never in ${missing})`;
}

function describeRound(round: RoundResult): string {
  const at = (ms: number | undefined) => (ms === undefined ? 'never' : seconds(ms));
  return [
    `promoted ${at(round.promotedMs)}`,
    `any acquire ${at(round.probeMs)}`,
    `held key ${at(round.takenOverMs)}`,
    round.overlapMs === undefined ? 'one holder' : `TWO HOLDERS for ${seconds(round.overlapMs)}`,
    round.tokenNotAbove ? 'TOKEN NOT ABOVE' : 'tokens increasing',
    round.freshTokenNotAbove ? 'NEW KEY TOKEN NOT ABOVE' : '',
    round.holderRefused > 0 ? `holder refused ${round.holderRefused}x first` : '',
    round.lastError === undefined ? '' : `last error: ${round.lastError}`,
    round.clientEndedAfter === undefined
      ? ''
      : `THE CONTENDER'S CLIENT ENDED, after the error "${round.clientEndedAfter}": a new one took over`,
    round.failedOverAgain ? 'THE SENTINELS FAILED OVER AGAIN' : '',
  ]
    .filter(Boolean)
    .join(', ');
}
