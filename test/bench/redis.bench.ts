/**
 * RedisLockStore against the floor (a raw SET NX PX + compare-and-delete script) and the two
 * usual Node Redis locks, redlock (v5, one instance) and redis-semaphore (Mutex), on the same
 * Redis in the same process, through one shared connection: sequential acquire + release and 16
 * keys in parallel (each compared three times over, with the CPU each side spends), 8 contenders on
 * one key, the lock strategy (last: it turns on promise hooks), 8 waiters draining one key, and
 * the commands each sends per acquire, renew and release (counted with MONITOR).
 *
 * Uses REDIS_URL when set, else starts a private redis-server. `npm run bench -- redis`.
 */
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
// @ts-expect-error redlock 5 beta's package.json "exports" has no "types" entry, so NodeNext cannot see its .d.ts.
import RedlockModule from 'redlock';
import { ResiliencePipelineBuilder } from '../../src/index.ts';
import { RedisLockStore } from '../../src/stores/redis/index.ts';
import { storeScripts } from '../../src/stores/redis/scripts.ts';
import { startRedisServer } from '../support/redis.ts';
import { type BenchCase, type BenchOptions, compare, formatNumber, median, printTable } from './harness.ts';

/** The part of redlock's API the bench uses (its own types are unreachable, see the import). */
interface Lock {
  extend(duration: number): Promise<Lock>;
  release(): Promise<unknown>;
}
const Redlock = RedlockModule as new (
  clients: Redis[],
  settings: { retryCount: number; automaticExtensionThreshold: number },
) => { acquire(resources: string[], duration: number): Promise<Lock> };

const ttl = 30_000;
const owner = 'bench-owner';

const rawScripts = {
  rawRelease: {
    numberOfKeys: 1,
    lua: "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
  },
  rawRenew: {
    numberOfKeys: 1,
    lua: "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0",
  },
  /** The floor's `SET NX PX` as a script: what running a script costs Redis, without a token. */
  scriptAcquire: {
    numberOfKeys: 1,
    lua: "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0",
  },
};

interface RawCommands {
  rawRelease(key: string, owner: string): Promise<number>;
  rawRenew(key: string, owner: string, ttl: number): Promise<number>;
  scriptAcquire(key: string, owner: string, ttl: number): Promise<number>;
}

/** One lock implementation, as the bench drives it. */
interface Contender {
  name: string;
  /** Takes the lock on `key` if free; returns a handle to release it, or undefined. */
  tryAcquire(key: string, id: string): Promise<unknown>;
  renew(key: string, id: string, handle: unknown): Promise<unknown>;
  release(key: string, id: string, handle: unknown): Promise<unknown>;
}

export default async function redisBench(options: BenchOptions): Promise<void> {
  const server = process.env.REDIS_URL ? undefined : await startRedisServer();
  const url = process.env.REDIS_URL ?? server!.url;
  const clients: Redis[] = [];
  const connect = () => {
    const client = new Redis(url);
    clients.push(client);
    return client;
  };
  const run = `${process.pid}`;

  try {
    // One connection for every implementation, as an application shares its client: with a
    // connection each, the cases on their own connections measured 1.15x-1.17x the floor where
    // scripts sent on the floor's connection measured 1.07x-1.09x.
    const shared = connect() as Redis & RawCommands;
    for (const [name, definition] of Object.entries(rawScripts)) shared.defineCommand(name, definition);
    const raw: Contender = {
      name: 'raw SET NX PX + compare-and-delete (floor)',
      tryAcquire: async (key, id) =>
        (await shared.set(key, id, 'PX', ttl, 'NX')) === 'OK' ? true : undefined,
      renew: (key, id) => shared.rawRenew(key, id, ttl),
      release: (key, id) => shared.rawRelease(key, id),
    };

    const store = new RedisLockStore(shared, { prefix: `bench:${run}:` });
    const resil: Contender = {
      name: 'resil RedisLockStore',
      tryAcquire: (key, id) => store.acquire(key, id, ttl),
      renew: (key, id) => store.renew(key, id, ttl),
      release: (key, id) => store.release(key, id),
    };

    const redlock = new Redlock([shared], { retryCount: 0, automaticExtensionThreshold: 500 });
    const redlockContender: Contender = {
      name: 'redlock 5 (one instance)',
      tryAcquire: (key) => redlock.acquire([key], ttl).catch(() => undefined),
      renew: (_key, _id, handle) => (handle as Lock).extend(ttl),
      release: (_key, _id, handle) => (handle as Lock).release(),
    };

    const mutexOptions = { lockTimeout: ttl, acquireAttemptsLimit: 1, refreshInterval: 0 };
    const semaphore: Contender = {
      name: 'redis-semaphore Mutex',
      tryAcquire: async (key) => {
        const mutex = new Mutex(shared, key, mutexOptions);
        return (await mutex.tryAcquire()) ? mutex : undefined;
      },
      // `_refresh` is what its refresh interval calls; the bench turns the interval off.
      renew: (_key, _id, handle) => (handle as unknown as { _refresh(): Promise<boolean> })._refresh(),
      release: (_key, _id, handle) => (handle as Mutex).release(),
    };

    const contenders = [raw, resil, redlockContender, semaphore];
    const keyOf = (contender: Contender, suffix: string) =>
      `bench:${run}:${contenders.indexOf(contender)}:${suffix}`;

    const acquireRelease = async (contender: Contender, key: string, id: string) => {
      const handle = await contender.tryAcquire(key, id);
      if (handle === undefined) return false;
      await contender.release(key, id, handle);
      return true;
    };

    const sequential: BenchCase[] = contenders.map((contender) => {
      const key = keyOf(contender, 'sequential');
      return {
        name: contender.name,
        run: async () => {
          if (!(await acquireRelease(contender, key, owner)))
            throw new Error(`${contender.name}: key was held`);
        },
      };
    });
    // Where the floor and the store part: the floor's acquire as a script (no token), and the
    // store's own two scripts (token, wake-up publish) sent straight through ioredis, no store code.
    const scriptKey = keyOf(raw, 'sequential-script');
    const directKey = `{${keyOf(raw, 'sequential-direct')}}`;
    sequential.push(
      {
        name: 'floor, its acquire as a script (no token)',
        run: async () => {
          if ((await shared.scriptAcquire(scriptKey, owner, ttl)) !== 1) throw new Error('key was held');
          await shared.rawRelease(scriptKey, owner);
        },
      },
      {
        name: "resil's acquire and release scripts, sent directly",
        run: async () => {
          const { acquire, release } = storeScripts;
          const keys = [`${directKey}:lease`, `${directKey}:token`, `${directKey}:current`];
          if (!(await shared.evalsha(acquire.sha, 3, ...keys, owner, ttl))) throw new Error('key was held');
          await shared.evalsha(release.sha, 1, keys[0]!, owner, `${directKey}:released`);
        },
      },
    );
    // Loaded once: evalsha above has no NOSCRIPT fallback.
    await shared.script('LOAD', storeScripts.acquire.lua);
    await shared.script('LOAD', storeScripts.release.lua);
    // The lock strategy is measured last (below): on Node 20 its first execution turns on promise
    // hooks for the whole process, which would then slow every case measured after it.
    await compareRepeatedly('Redis lock: acquire + release, sequential', sequential, options, raw.name);

    await printCpuTime('CPU per op of sequential acquire + release', shared, sequential, options);

    const parallelKeys = 16;
    const parallel: BenchCase[] = contenders.map((contender) => {
      const keys = Array.from({ length: parallelKeys }, (_, index) => keyOf(contender, `parallel-${index}`));
      return {
        name: contender.name,
        run: () => Promise.all(keys.map((key) => acquireRelease(contender, key, owner))),
      };
    });
    const parallelTitle = `${parallelKeys} keys in parallel (one op = ${parallelKeys} x acquire + release)`;
    await compareRepeatedly(`Redis lock: ${parallelTitle}`, parallel, options, raw.name);
    await printCpuTime(`CPU per op of ${parallelTitle}`, shared, parallel, options);

    const contending = 8;
    await compare(
      `Redis lock: ${contending} contenders on one key (one op = each tries once, the winner releases)`,
      contenders.map((contender) => {
        const key = keyOf(contender, 'contended');
        const ids = Array.from({ length: contending }, (_, index) => `${owner}-${index}`);
        return {
          name: contender.name,
          run: () => Promise.all(ids.map((id) => acquireRelease(contender, key, id))),
        };
      }),
      { ...options, baseline: raw.name },
    );

    // From here on promise hooks are on (Node 20): the lock strategy enters AsyncLocalStorage.
    const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'pipeline', ttl, store }).build();
    await compare(
      'Redis lock: the lock strategy, execute(() => {}), and the store again in the same process (promise hooks on from its first execution)',
      [
        sequential[0]!,
        sequential[1]!,
        { name: 'resil lock pipeline: execute(() => {})', run: () => pipeline.execute(() => {}) },
      ],
      { ...options, baseline: raw.name },
    );

    await drainWaiters(options, connect, run);

    const counts = [];
    for (const contender of contenders)
      counts.push(await countCommands(connect(), shared, contender, keyOf(contender, 'count')));
    printTable(
      'Redis commands sent per operation (MONITOR, after warm-up; scripts count once)',
      ['implementation', 'acquire', 'renew', 'release'],
      counts.map((count, index) => [contenders[index]!.name, count.acquire, count.renew, count.release]),
    );

    const stray = await clients[0]!.keys(`bench:${run}:*`);
    if (stray.length > 0) await clients[0]!.del(...stray);
  } finally {
    for (const client of clients) client.disconnect();
    await server?.stop();
  }
}

/**
 * `compare()` run three times over (once in a smoke run), then each case's ratio to `baseline`
 * across the runs: here one run's ratio moves by more than the cases differ.
 */
async function compareRepeatedly(
  title: string,
  cases: BenchCase[],
  options: BenchOptions,
  baseline: string,
): Promise<void> {
  const runs = options.smoke ? 1 : 3;
  const ratios = cases.map((): number[] => []);
  for (let run = 1; run <= runs; run++) {
    const rows = await compare(`${title}, run ${run} of ${runs}`, cases, { ...options, baseline });
    for (const [index, row] of rows.entries()) ratios[index]!.push(row.ratio);
  }
  printTable(
    `${title}: time per op / the floor's, over the ${runs === 1 ? 'one run' : `${runs} runs`} above`,
    ['case', 'median', 'lowest', 'highest'],
    cases.map((each, index) => {
      const values = ratios[index]!;
      return [
        each.name,
        `${median(values).toFixed(2)}x`,
        `${Math.min(...values).toFixed(2)}x`,
        `${Math.max(...values).toFixed(2)}x`,
      ];
    }),
  );
}

/**
 * Where each case's time goes: the CPU time this process and redis-server (`INFO cpu`) used over a
 * run of the case alone, per op, user + system. Socket calls are in both; with a shared REDIS_URL,
 * other clients' commands are in the server's figure.
 */
async function printCpuTime(
  title: string,
  client: Redis,
  cases: BenchCase[],
  options: BenchOptions,
): Promise<void> {
  const serverCpuUs = async () => {
    const info = await client.info('cpu');
    const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1]);
    return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6;
  };
  const ops = options.smoke ? 5 : 2_000;
  const rows = [];
  for (const each of cases) {
    const before = await serverCpuUs();
    const ownBefore = process.cpuUsage();
    for (let op = 0; op < ops; op++) await each.run();
    const own = process.cpuUsage(ownBefore);
    const after = await serverCpuUs();
    rows.push([each.name, formatNumber((own.user + own.system) / ops), formatNumber((after - before) / ops)]);
  }
  printTable(
    `${title}: this process (process.cpuUsage) and redis-server (INFO cpu; with REDIS_URL, other clients' too), one run of ${ops} ops per case${options.smoke ? ', smoke run: figures are meaningless' : ''}`,
    ['case', 'node CPU µs per op', 'redis-server CPU µs per op'],
    rows,
  );
}

/**
 * 8 waiters start at once on one key; each holds it 10 ms (the ideal drain: 80 ms). resil's lock
 * strategy waits with its polls plus the release wake-up (and, for reference, with polls alone);
 * redis-semaphore's Mutex retries every 10 ms, redlock every 200 ms (+ up to 100 ms jitter), their
 * defaults. Time until all 8 are done, median of interleaved rounds.
 */
async function drainWaiters(options: BenchOptions, connect: () => Redis, run: string): Promise<void> {
  const waiters = 8;
  const holdMs = 10;
  const ideal = waiters * holdMs;
  const hold = () => new Promise((resolve) => setTimeout(resolve, holdMs));
  const wake = new RedisLockStore(connect(), { prefix: `bench:${run}:wake:` });
  const poll = new RedisLockStore(connect(), { prefix: `bench:${run}:poll:`, releaseNotifications: false });
  const lockOn = (store: RedisLockStore) =>
    new ResiliencePipelineBuilder().addLock({ key: () => 'drain', ttl, wait: '30s', store }).build();
  const withWakeUps = lockOn(wake);
  const pollsOnly = lockOn(poll);
  const semaphoreClient = connect();
  const redlock = new Redlock([connect()], { retryCount: 1_000, automaticExtensionThreshold: 500 });
  const cases: Array<{ name: string; drain: () => Promise<unknown> }> = [
    {
      name: 'resil lock strategy, RedisLockStore (polls + wake-up on release)',
      drain: () => Promise.all(Array.from({ length: waiters }, () => withWakeUps.execute(hold))),
    },
    {
      name: 'resil, releaseNotifications: false (polls alone, 50 ms doubling to 1 s)',
      drain: () => Promise.all(Array.from({ length: waiters }, () => pollsOnly.execute(hold))),
    },
    {
      name: 'redis-semaphore Mutex (retry every 10 ms)',
      drain: () =>
        Promise.all(
          Array.from({ length: waiters }, async () => {
            const mutex = new Mutex(semaphoreClient, `bench:${run}:semaphore-drain`, {
              lockTimeout: ttl,
              acquireTimeout: 30_000,
              refreshInterval: 0,
            });
            await mutex.acquire();
            await hold();
            await mutex.release();
          }),
        ),
    },
    {
      name: 'redlock 5 (retry every 200 ms + jitter)',
      drain: () =>
        Promise.all(
          Array.from({ length: waiters }, async () => {
            const lock = await redlock.acquire([`bench:${run}:redlock-drain`], ttl);
            await hold();
            await lock.release();
          }),
        ),
    },
  ];
  const rounds = options.smoke ? 1 : 5;
  const samples = cases.map((): number[] => []);
  for (let round = 0; round < rounds; round++) {
    for (const [index, each] of cases.entries()) {
      const startedAt = performance.now();
      await each.drain();
      samples[index]!.push(performance.now() - startedAt);
    }
  }
  printTable(
    `Redis lock: ${waiters} waiters on one key, ${holdMs} ms each (median of ${rounds} interleaved rounds${options.smoke ? ', smoke run: figures are meaningless' : ''})`,
    ['case', 'drained in ms', `vs ideal ${ideal} ms`],
    cases.map((each, index) => [
      each.name,
      formatNumber(median(samples[index]!)),
      `${(median(samples[index]!) / ideal).toFixed(2)}x`,
    ]),
  );
  await Promise.all([wake.close(), poll.close()]);
}

/** Commands `contender`'s connection sends per acquire, renew and release, averaged over 20 of each. */
async function countCommands(
  monitorClient: Redis,
  client: Redis,
  contender: Contender,
  key: string,
): Promise<{ acquire: number; renew: number; release: number }> {
  const rounds = 20;
  const keys = Array.from({ length: rounds }, (_, index) => `${key}-${index}`);
  // Warm-up: load scripts, so a first-use EVAL or NOSCRIPT retry is not counted.
  const warm = await contender.tryAcquire(key, owner);
  await contender.renew(key, owner, warm);
  await contender.release(key, owner, warm);

  const localPort = (client as unknown as { stream: { localPort: number } }).stream.localPort;
  const monitor = await monitorClient.monitor();
  const phases = ['acquire', 'renew', 'release'] as const;
  const sent = { acquire: 0, renew: 0, release: 0 };
  // MONITOR shows a connection's commands in order, but on another connection: a marker command
  // after each phase tells the listener where one phase ends.
  let seen = 0;
  const markers = phases.map(() => {
    let resolve: () => void = () => {};
    const promise = new Promise<void>((settle) => {
      resolve = settle;
    });
    return { promise, resolve };
  });
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua' || !source.endsWith(`:${localPort}`) || seen >= phases.length) return;
    if (args[0] === 'echo' && args[1] === 'bench-marker') markers[seen++]!.resolve();
    else sent[phases[seen]!]++;
  });
  const handles = [];
  for (const each of keys) handles.push(await contender.tryAcquire(each, owner));
  await client.echo('bench-marker');
  for (const [index, each] of keys.entries()) await contender.renew(each, owner, handles[index]);
  await client.echo('bench-marker');
  for (const [index, each] of keys.entries()) await contender.release(each, owner, handles[index]);
  await client.echo('bench-marker');
  await Promise.all(markers.map((marker) => marker.promise));
  monitor.disconnect();
  return { acquire: sent.acquire / rounds, renew: sent.renew / rounds, release: sent.release / rounds };
}
