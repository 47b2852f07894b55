import { Redis } from 'ioredis';
import {
  type ClaimRequest,
  type ClaimResult,
  isInvalidKeyError,
  isInvalidOptionError,
  isStaleTokenError,
  isStoreUnavailableError,
  type OccurrenceLease,
  type RunLedger,
} from 'resil';
import { RedisLockStore, redisLockStoreDefaults } from 'resil/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Not exported by the package: the limit the store must honour.
import { ledgerRecordLimit } from '../../../src/ledger/defaults.ts';
import { RedisKeys } from '../../../src/stores/redis/keys.ts';
import {
  packArguments,
  runScript,
  type StoreScript,
  storeScripts,
} from '../../../src/stores/redis/scripts.ts';
import {
  privateRedisUnavailableReason,
  type RedisServer,
  scanKeys,
  startRedisServer,
} from '../../support/redis.ts';

const ttl = 30_000;

/** A claim of `scheduledAt` (default: 2 s ago, a whole second) for `job` on `key` (default: the job's name). */
function claimOf(ledger: RunLedger, overrides: Partial<ClaimRequest> = {}): Promise<ClaimResult> {
  const job = overrides.job ?? 'nightly';
  return ledger.claimOccurrence({
    job,
    key: job,
    scheduledAt: Math.floor((Date.now() - 2_000) / 1_000) * 1_000,
    owner: `owner-${Math.random()}`,
    instance: 'test:1',
    ttlMs: ttl,
    overlap: 'skip',
    startingDeadlineMs: 60_000,
    ...overrides,
  });
}

async function grantOf(ledger: RunLedger, overrides: Partial<ClaimRequest> = {}): Promise<OccurrenceLease> {
  const result = await claimOf(ledger, overrides);
  if (result.status !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
  return result.lease;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('RedisLockStore defaults and options', () => {
  it('pins the documented defaults', () => {
    expect(redisLockStoreDefaults).toEqual({
      prefix: 'resil:',
      commandTimeout: 2_000,
      waitForReplicas: 0,
      replicaTimeout: 500,
      releaseNotifications: true,
      retentionMs: 7 * 86_400_000,
      historyLimit: 20,
    });
  });

  // No server needed: the store validates before it sends anything.
  const client = new Redis({ lazyConnect: true });
  afterAll(() => client.disconnect());

  it.each([
    [{ commandTimeout: -1 }, 'commandTimeout', '-1'],
    [{ commandTimeout: 'soon' }, 'commandTimeout', '"soon"'],
    [{ commandTimeout: 5 }, 'commandTimeout', '5'],
    [{ waitForReplicas: 1.5 }, 'waitForReplicas', '1.5'],
    [{ waitForReplicas: -1 }, 'waitForReplicas', '-1'],
    [{ waitForReplicas: 1, replicaTimeout: '2s' }, 'replicaTimeout', '"2s"'],
    [{ prefix: 42 }, 'prefix', '42'],
    [{ releaseNotifications: 'yes' }, 'releaseNotifications', '"yes"'],
  ])('rejects %o naming the option and the value', (options, option, shown) => {
    let caught: unknown;
    try {
      new RedisLockStore(client, options as never);
    } catch (error) {
      caught = error;
    }
    expect(isInvalidOptionError(caught)).toBe(true);
    expect((caught as Error).message).toContain(option);
    expect((caught as Error).message).toContain(shown);
  });

  it('rejects something that is not an ioredis client', () => {
    expect(() => new RedisLockStore({} as never)).toThrow(/client/);
    expect(() => new RedisLockStore('redis://localhost' as never)).toThrow(/client/);
  });

  it('rejects keys that would break the hash tag, and bad ttls and tokens, before sending', async () => {
    const store = new RedisLockStore(client);
    await expect(store.acquire('', 'owner', ttl)).rejects.toThrow(/key/);
    await expect(store.acquire('}x', 'owner', ttl)).rejects.toThrow(/key/);
    await expect(store.acquire('k', 'owner', 0)).rejects.toThrow(/ttlMs/);
    await expect(store.renew('k', 'owner', Number.NaN)).rejects.toThrow(/ttlMs/);
    await expect(store.fencedSet('r', -1, 'v', 'x')).rejects.toThrow(/token/);
    await expect(store.fencedSet('r', 1.5, 'v', 'x')).rejects.toThrow(/token/);
    expect(client.status).toBe('wait');
  });

  it('rejects invalid claims, leases, results and history options before sending', async () => {
    const store = new RedisLockStore(client);
    await expect(claimOf(store, { job: '' })).rejects.toThrow(/job/);
    await expect(claimOf(store, { key: '}x' })).rejects.toThrow(/key/);
    await expect(claimOf(store, { scheduledAt: 1.5 })).rejects.toThrow(/scheduledAt/);
    await expect(claimOf(store, { owner: '' })).rejects.toThrow(/owner/);
    await expect(claimOf(store, { ttlMs: 0 })).rejects.toThrow(/ttlMs/);
    await expect(claimOf(store, { overlap: 'sometimes' as never })).rejects.toThrow(/overlap.*"sometimes"/);
    await expect(claimOf(store, { startingDeadlineMs: -1 })).rejects.toThrow(/startingDeadlineMs/);
    await expect(claimOf(store, { startingDeadlineMs: Number.POSITIVE_INFINITY })).rejects.toThrow(
      /startingDeadlineMs/,
    );
    const lease: OccurrenceLease = {
      job: 'nightly',
      key: 'nightly',
      scheduledAt: 1_000,
      owner: 'a',
      token: 7,
      overlap: 'skip',
    };
    await expect(store.renewOccurrence(lease, Number.NaN)).rejects.toThrow(/ttlMs/);
    await expect(store.renewOccurrence({ ...lease, key: '' }, ttl)).rejects.toThrow(/lease\.key/);
    await expect(store.finishOccurrence({ ...lease, token: -1 }, { outcome: 'success' })).rejects.toThrow(
      /lease\.token/,
    );
    await expect(store.finishOccurrence(lease, { outcome: 'skipped' as never })).rejects.toThrow(
      /result\.outcome/,
    );
    await expect(store.finishOccurrence(lease, { outcome: 'success' }, { retentionMs: -1 })).rejects.toThrow(
      /retentionMs/,
    );
    await expect(store.runHistory('nightly', { limit: -1 })).rejects.toThrow(/limit/);
    await expect(store.runHistory('nightly', { limit: 1.5 })).rejects.toThrow(/limit/);
    await expect(store.runHistory('nightly', { key: '' })).rejects.toThrow(/key/);
    await expect(store.lastCompleted('')).rejects.toThrow(/job/);
    expect(await store.runHistory('nightly', { limit: 0 })).toEqual([]);
    expect(client.status).toBe('wait');
  });
});

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore on a private Redis', () => {
  let server: RedisServer;
  let client: Redis;
  /** A second connection for looking at the server without touching the store's command stats. */
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    client?.disconnect();
    admin?.disconnect();
    await server?.stop();
  });

  it("refuses a lock key, ledger key or resource with '}', so that no two names share a Redis key", async () => {
    const store = new RedisLockStore(client, { prefix: 'braces:' });
    // The value 'v}:lease' of the resource 'r' is written at {r}:value:v}:lease ...
    await store.fencedSet('r', 1, 'v}:lease', 'x');
    expect(await admin.get('braces:{r}:value:v}:lease')).toBe('x');
    // ... which would be the lease of the lock key 'r}:value:v': held forever, by nobody.
    for (const key of ['r}:value:v', 'a}', 'a}b']) {
      const refused = await store.acquire(key, 'owner', ttl).catch((error: unknown) => error);
      expect(isInvalidKeyError(refused), String(refused)).toBe(true);
      expect(refused).toMatchObject({ code: 'INVALID_KEY', store: 'RedisLockStore', option: 'key', key });
      expect((refused as Error).message).toContain("contains '}'");
    }
    await expect(store.fencedSet('r}:x', 1, 'v', 'x')).rejects.toMatchObject({ option: 'resource' });
    await expect(store.fencedGet('r}:x', 'v')).rejects.toMatchObject({ option: 'resource' });
    await expect(claimOf(store, { job: 'report', key: 'report}:occ:x' })).rejects.toMatchObject({
      option: 'key',
    });
    // A job name without a key of its own is the key.
    await expect(claimOf(store, { job: 'n}:occ:n' })).rejects.toMatchObject({ option: 'key' });
    await expect(store.runHistory('n', { key: 'n}' })).rejects.toMatchObject({ option: 'key' });
    // At most 1000 bytes of UTF-8, as on PostgreSQL; checkKey() says so without a round trip.
    await expect(store.acquire('é'.repeat(501), 'owner', ttl)).rejects.toThrow(
      'RedisLockStore cannot keep the key "ééé',
    );
    expect(() => store.checkKey('é'.repeat(501))).toThrow('it is 1002 bytes of UTF-8; the limit is 1000.');
    expect(() => store.checkKey('r}')).toThrow("contains '}'");
    store.checkKey('é'.repeat(500));
    // A '{' is no delimiter inside the tag: such a key works and stays apart from its neighbours.
    const token = await store.acquire('{r', 'owner', ttl);
    expect(token).toBeGreaterThan(0);
    expect(await store.acquire('r', 'owner', ttl)).toBeGreaterThan(0);
    expect(await admin.exists('braces:{{r}:lease', 'braces:{r}:lease')).toBe(2);
    await admin.del(...(await scanKeys(admin, 'braces:*')));
  });

  it("puts every key it writes under the prefix, a lock's and its occurrences' under the lease key's hash tag", async () => {
    const store = new RedisLockStore(client, { prefix: 'billing:' });
    const token = await store.acquire('nightly', 'a', ttl);
    await store.renew('nightly', 'a', ttl);
    await store.inspect('nightly');
    await store.fencedSet('report', token!, 'latest', 'body');
    await store.release('nightly', 'a');
    // The job's lock key is not its name: the ledger lives under the key's hash tag.
    const lease = await grantOf(store, { job: 'nightly', key: 'nightly-lock', overlap: 'buffer-all' });
    expect(
      await claimOf(store, {
        job: 'nightly',
        key: 'nightly-lock',
        overlap: 'buffer-all',
        scheduledAt: lease.scheduledAt + 1_000,
      }),
    ).toMatchObject({ status: 'wait' });
    expect(await scanKeys(admin, '*')).toEqual([
      'billing:{nightly-lock}:lease',
      'billing:{nightly-lock}:occ:nightly',
      'billing:{nightly-lock}:queue:nightly',
      'billing:{nightly-lock}:token',
      'billing:{nightly}:token',
      'billing:{report}:fence',
      'billing:{report}:value:latest',
    ]);
    await store.finishOccurrence(lease, { outcome: 'success' });
    expect(await store.lastCompleted('nightly', { key: 'nightly-lock' })).toBe(lease.scheduledAt);
    // Nothing under the job's own name (no key given means the job's name is its key).
    expect(await store.runHistory('nightly')).toEqual([]);
    expect(await store.lastCompleted('nightly')).toBeUndefined();
    // Finished: the lease is gone (the key's current occurrence, a field of the records, emptied);
    // the queued one waits for its next claim.
    expect(await scanKeys(admin, 'billing:{nightly-lock}:*')).toEqual([
      'billing:{nightly-lock}:occ:nightly',
      'billing:{nightly-lock}:queue:nightly',
      'billing:{nightly-lock}:token',
    ]);
    await admin.flushall();
  });

  it("refuses a ledger write made on a read when the job was paused, the key's lease taken, or the record written in between", async () => {
    const store = new RedisLockStore(client, { prefix: 'cas:' });
    const keys = new RedisKeys('cas:');
    const at = Date.now() - 1_000;
    // The scripts' batch form, one call: its lease key, then its ARGV packed.
    const call = (script: StoreScript, job: string, argv: Array<string | number>) =>
      runScript(client, script, true, [keys.lease(job), packArguments(argv)]) as Promise<unknown[]>;
    const read = async (job: string) => {
      const [reply] = (await call(storeScripts.ledgerRead, job, [
        job,
        'claim',
        0,
        0,
        1,
        String(at),
      ])) as string[][];
      // The version, before the parts it is a digest of (the job's counter, the key's token).
      return reply!.at(-3)!;
    };
    // A write that puts nothing: the version check alone (replies -1 when written, 0 when refused).
    // `decidedAt`: the store time a decision made on a view the process knew was made at.
    const write = async (job: string, version: string, decidedAt = '') => {
      const [reply] = await call(storeScripts.ledgerWrite, job, [
        job,
        1,
        String(at),
        version,
        decidedAt,
        '',
        '',
        '',
        '',
        '0',
        '',
        '',
        '0',
        0,
        0,
      ]);
      return Array.isArray(reply) ? reply[0] : reply;
    };
    expect(await write('steady', await read('steady'))).toBe(-1);
    // Decided on a known view: not at a time after the store's, nor more than a second before it.
    const serverNow = async () => {
      const [seconds, microseconds] = await admin.time();
      return Number(seconds) * 1_000 + Math.floor(Number(microseconds) / 1_000);
    };
    expect(await write('clock', await read('clock'), String((await serverNow()) + 60_000))).toBe(0);
    expect(await write('clock', await read('clock'), String((await serverNow()) - 60_000))).toBe(0);
    expect(await write('clock', await read('clock'), String(await serverNow()))).toBe(-1);
    // Every write moves the version on: a second write on the same read is refused.
    const once = await read('twice');
    expect(await write('twice', once)).toBe(-1);
    expect(await write('twice', once)).toBe(0);
    const paused = await read('paused');
    await store.pauseJob('paused', { key: 'paused', by: 'test' });
    expect(await write('paused', paused)).toBe(0);
    const resumed = await read('paused');
    await store.resumeJob('paused', { key: 'paused' });
    expect(await write('paused', resumed)).toBe(0);
    const locked = await read('locked');
    await store.acquire('locked', 'someone', ttl);
    expect(await write('locked', locked)).toBe(0);
    // Under a lease, the owner alone is checked (each acquisition has its own), and another owner
    // since is a change.
    expect(await write('locked', await read('locked'))).toBe(-1);
    const held = await read('locked');
    await store.release('locked', 'someone');
    await store.acquire('locked', 'another', ttl);
    expect(await write('locked', held)).toBe(0);
    // A free lease (released, or expired): the key's token is checked. Any acquisition since
    // increments it, such as another job's grant under the same key whose lease then ran out
    // (leaving its occurrence current), or a plain lock taken and released.
    const free = await read('expired');
    await admin.incr(keys.token('expired'));
    await admin.hset(keys.current('expired'), 'job', 'other', 'at', String(at));
    expect(await write('expired', free)).toBe(0);
    const expired = await read('expired');
    expect(await write('expired', expired)).toBe(-1);
    const released = await read('expired');
    await store.acquire('expired', 'someone', ttl);
    await store.release('expired', 'someone');
    expect(await write('expired', released)).toBe(0);
    // As an instance of an earlier release writes a record: without the job's counter.
    const recorded = await read('recorded');
    await admin.hset(keys.occurrences('recorded', 'recorded'), String(at), '{"outcome":"running"}');
    expect(await write('recorded', recorded)).toBe(0);
    await admin.flushall();
  });

  it("sends one command per lock operation and per ledger query, a conditional write alone for a new job's claim and for the renewal and finish that follow it (MONITOR)", async () => {
    const store = new RedisLockStore(client, { prefix: 'count:' });
    const round = async (name: string) => {
      // A plain lock on a key of its own: one on the job's key would leave a token there, and the
      // claim of the job, presumed new, would then read.
      await store.acquire(`lock-${name}`, 'a', ttl);
      await store.renew(`lock-${name}`, 'a', ttl);
      await store.inspect(`lock-${name}`);
      await store.release(`lock-${name}`, 'a');
      const lease = await grantOf(store, { job: name });
      await store.renewOccurrence(lease, ttl);
      await store.finishOccurrence(lease, { outcome: 'success' });
      await store.runHistory(name);
      await store.lastCompleted(name);
    };
    // acquire, renew, inspect, release, runHistory: one script each; lastCompleted: the records'
    // fields (HKEYS), then the newest records (HMGET), decoded in the process; the claim of a new
    // job: a write, decided on the view presumed empty for a job this process knows nothing of;
    // its renewal and its finish: a write each, decided on what the store knows after its own
    // last write.
    const perRound = 5 + 2 + 1 + 1 + 1;
    // The first use of a script on a server is EVALSHA, NOSCRIPT, then EVAL (which loads it).
    await round('warm-up');
    const monitor = await admin.monitor();
    const sent: string[] = [];
    let markerSeen: () => void = () => {};
    const marker = new Promise<void>((resolve) => {
      markerSeen = resolve;
    });
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua') return; // commands a script ran inside the server, not sent by a client
      if (args[0] === 'echo' && args[1] === 'marker') markerSeen();
      else sent.push(args[0]!);
    });
    const rounds = 25;
    for (let index = 0; index < rounds; index++) await round(`k${index}`);
    await client.echo('marker');
    await marker;
    monitor.disconnect();
    expect(sent.length).toBe(rounds * perRound);
    expect(new Set(sent)).toEqual(new Set(['evalsha', 'hkeys', 'hmget']));
  });

  it('keeps working after the script cache is flushed (NOSCRIPT falls back to EVAL)', async () => {
    const store = new RedisLockStore(client, { prefix: 'flush:' });
    expect(await store.acquire('k', 'a', ttl)).toBeGreaterThan(0);
    await admin.script('FLUSH');
    expect(await store.renew('k', 'a', ttl)).toBe(true);
    await store.release('k', 'a');
    expect(await store.inspect('k')).toBeUndefined();
    const lease = await grantOf(store, { job: 'j' });
    await admin.script('FLUSH');
    expect(await store.renewOccurrence(lease, ttl)).toBe(true);
    await admin.script('FLUSH');
    await store.finishOccurrence(lease, { outcome: 'success' });
    await admin.script('FLUSH');
    expect(await store.runHistory('j')).toMatchObject([
      { scheduledAt: lease.scheduledAt, outcome: 'success' },
    ]);
    await admin.script('FLUSH');
    expect(await store.lastCompleted('j')).toBe(lease.scheduledAt);
    await admin.script('FLUSH');
    expect(await claimOf(store, { job: 'j', scheduledAt: lease.scheduledAt })).toEqual({
      status: 'skipped',
      reason: 'already-done',
    });
  });

  describe('acquires and releases issued in the same tick share one script call', () => {
    /** The commands `client` sends while `work` runs, by MONITOR on another connection. */
    async function commandsDuring(work: () => Promise<unknown>): Promise<string[][]> {
      const monitor = await admin.monitor();
      const sent: string[][] = [];
      let markerSeen: () => void = () => {};
      const marker = new Promise<void>((resolve) => {
        markerSeen = resolve;
      });
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        if (source === 'lua') return;
        if (args[0] === 'echo' && args[1] === 'batch-marker') markerSeen();
        else sent.push(args);
      });
      await work();
      await client.echo('batch-marker');
      await marker;
      monitor.disconnect();
      return sent;
    }

    it('16 concurrent acquires are one EVALSHA, their 16 releases another; each gets its own answer', async () => {
      const store = new RedisLockStore(client, { prefix: 'batch:' });
      const keys = Array.from({ length: 16 }, (_, index) => `k${index}`);
      // Warm-up: the scripts are loaded, so no NOSCRIPT round trip is counted.
      await Promise.all(keys.map((key) => store.acquire(key, 'warm', ttl)));
      await Promise.all(keys.map((key) => store.release(key, 'warm')));
      await store.acquire('warm', 'warm', ttl);
      await store.release('warm', 'warm');
      await store.acquire('k3', 'someone-else', ttl);
      let tokens: Array<number | undefined> = [];
      const sent = await commandsDuring(async () => {
        tokens = await Promise.all(keys.map((key) => store.acquire(key, 'a', ttl)));
        await Promise.all(keys.map((key) => store.release(key, 'a')));
      });
      expect(sent.map((args) => [args[0], args[2]])).toEqual([
        ['evalsha', String(16 * 3)],
        ['evalsha', '16'],
      ]);
      expect(tokens[3]).toBeUndefined();
      expect(tokens.filter((token) => token !== undefined)).toHaveLength(15);
      for (const [index, key] of keys.entries()) {
        if (index !== 3) expect(await store.inspect(key), key).toBeUndefined();
      }
      expect((await store.inspect('k3'))?.owner).toBe('someone-else');
      // One at a time, each is its own single script, as before.
      const single = await commandsDuring(async () => {
        await store.acquire('k0', 'b', ttl);
        await store.release('k0', 'b');
      });
      expect(single.map((args) => [args[0], args[2]])).toEqual([
        ['evalsha', '3'],
        ['evalsha', '1'],
      ]);
    });

    it("250 concurrent claims go out in script calls of at most 100 (a new job's: writes on the view presumed empty; those that wait: reads), at most 4 in flight, and so do their finishes (writes alone); each gets its own answer", async () => {
      const store = new RedisLockStore(client, { prefix: `claim-batch-${Date.now()}:` });
      const jobs = Array.from({ length: 250 }, (_, index) => `job-${index}`);
      // Warm-up: both forms of both scripts are loaded, so no NOSCRIPT round trip is counted.
      for (const batch of [1, 2]) {
        const warm = await Promise.all(
          Array.from({ length: batch }, (_, index) => grantOf(store, { job: `warm-${batch}-${index}` })),
        );
        await Promise.all(warm.map((lease) => store.finishOccurrence(lease, { outcome: 'success' })));
      }
      const scheduledAt = Math.floor((Date.now() - 2_000) / 1_000) * 1_000;
      let claims: ClaimResult[] = [];
      let others: ClaimResult[] = [];
      const sent = await commandsDuring(async () => {
        claims = await Promise.all(jobs.map((job) => claimOf(store, { job, scheduledAt })));
        // Another instance's fires of the same occurrences, while they run.
        others = await Promise.all(
          jobs.map((job) => claimOf(store, { job, scheduledAt, instance: 'test:2' })),
        );
      });
      // Each claim of a job new to the process is a write on the view presumed empty; the second
      // claims are decided on the view each grant left, and read (a claim that waits writes nothing).
      const script = (args: string[]) =>
        args[1] === storeScripts.ledgerRead.sha
          ? 'read'
          : args[1] === storeScripts.ledgerWrite.sha
            ? 'write'
            : args[0];
      const calls = (commands: string[][]) =>
        commands.map((args) => [script(args), Number(args[2]) / storeScripts.ledgerRead.numberOfKeys]);
      expect(calls(sent)).toEqual([
        ['write', 100],
        ['write', 100],
        ['write', 50],
        ['read', 100],
        ['read', 100],
        ['read', 50],
      ]);
      expect(claims.map((claim) => claim.status)).toEqual(jobs.map(() => 'granted'));
      for (const [index, claim] of claims.entries()) {
        expect(claim.status === 'granted' && claim.lease.job).toBe(jobs[index]);
      }
      expect(
        others.map((other) => [other.status, other.status === 'wait' && other.runningElsewhere]),
      ).toEqual(jobs.map(() => ['wait', true]));
      const finishes = await commandsDuring(() =>
        Promise.all(
          claims.map((claim, index) =>
            claim.status === 'granted'
              ? store.finishOccurrence(
                  claim.lease,
                  index === 7 ? { outcome: 'failure', error: 'boom' } : { outcome: 'success' },
                )
              : undefined,
          ),
        ),
      );
      // Decided on what the store knows after its grants: writes alone.
      expect(calls(finishes)).toEqual([
        ['write', 100],
        ['write', 100],
        ['write', 50],
      ]);
      expect(await store.runHistory('job-7')).toMatchObject([{ outcome: 'failure', error: 'boom' }]);
      // Each claim got its own answer: the token in its job's record.
      for (const [index, claim] of claims.entries()) {
        const [record] = await store.runHistory(jobs[index]!);
        expect(record).toMatchObject({ outcome: index === 7 ? 'failure' : 'success' });
        expect(claim.status === 'granted' && record!.token).toBe(
          claim.status === 'granted' && claim.lease.token,
        );
      }
      // A stale finish in a batch is refused on its own; the other one in the call is recorded.
      const earlier = scheduledAt - 1_000;
      const again = await Promise.all(
        ['job-0', 'job-1'].map((job) => grantOf(store, { job, scheduledAt: earlier })),
      );
      const [fresh, stale] = await Promise.allSettled([
        store.finishOccurrence(again[0]!, { outcome: 'success' }),
        store.finishOccurrence({ ...again[1]!, token: again[1]!.token - 1_000 }, { outcome: 'success' }),
      ]);
      expect(fresh.status).toBe('fulfilled');
      expect(stale.status === 'rejected' && isStaleTokenError(stale.reason)).toBe(true);
      expect(await store.runHistory('job-0')).toContainEqual(
        expect.objectContaining({ scheduledAt: earlier, outcome: 'success' }),
      );
    });

    it('keeps the order they were issued in: a release then an acquire of the key in one tick hands it over', async () => {
      const store = new RedisLockStore(client, { prefix: 'batch-order:' });
      await store.acquire('k', 'a', ttl);
      const [, , token] = await Promise.all([
        store.acquire('k', 'b', ttl),
        store.release('k', 'a'),
        store.acquire('k', 'c', ttl),
        store.acquire('k', 'd', ttl),
      ]);
      expect(token).toBeGreaterThan(0);
      expect((await store.inspect('k'))?.owner).toBe('c');
    });

    it('50 acquires of one key in one tick: exactly one wins, tokens keep increasing', async () => {
      const store = new RedisLockStore(client, { prefix: 'batch-race:' });
      const first = (await store.acquire('k', 'warm', ttl))!;
      await store.release('k', 'warm');
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, index) => store.acquire('k', `owner-${index}`, ttl)),
      );
      const winners = results.filter((token) => token !== undefined);
      expect(winners).toEqual([first + 1]);
      expect((await store.inspect('k'))?.owner).toBe(`owner-${results.indexOf(first + 1)}`);
    });

    it('a batch still works after the script cache is flushed (NOSCRIPT falls back to EVAL)', async () => {
      const store = new RedisLockStore(client, { prefix: 'batch-flush:' });
      await admin.script('FLUSH');
      const tokens = await Promise.all(['a', 'b', 'c'].map((key) => store.acquire(key, 'o', ttl)));
      expect(tokens.every((token) => token !== undefined && token > 0)).toBe(true);
      await admin.script('FLUSH');
      await Promise.all(['a', 'b', 'c'].map((key) => store.release(key, 'o')));
      expect(await Promise.all(['a', 'b', 'c'].map((key) => store.inspect(key)))).toEqual([
        undefined,
        undefined,
        undefined,
      ]);
    });
  });

  it('seeds a missing token counter from the server clock in microseconds, kept in a key that never expires', async () => {
    const store = new RedisLockStore(client, { prefix: 'tokens:' });
    const [seconds, microseconds] = await admin.time();
    const before = Number(seconds) * 1_000_000 + Number(microseconds);
    const first = (await store.acquire('k', 'a', 500))!;
    expect(first).toBeGreaterThanOrEqual(before);
    expect(first).toBeLessThan(before + 60_000_000);
    expect(Number.isSafeInteger(first)).toBe(true);
    expect(await admin.pttl('tokens:{k}:lease')).toBeGreaterThan(0);
    expect(await admin.pttl('tokens:{k}:lease')).toBeLessThanOrEqual(500);
    expect(await admin.ttl('tokens:{k}:token')).toBe(-1);
    await store.release('k', 'a');
    // Then it counts acquisitions.
    expect(await store.acquire('k', 'b', 500)).toBe(first + 1);
  });

  it('reports the live lease with its expiry by the server clock', async () => {
    const store = new RedisLockStore(client, { prefix: 'inspect:' });
    const token = await store.acquire('k', 'owner-1', 10_000);
    const serverNow = await store.now();
    const lease = await store.inspect('k');
    expect(lease?.owner).toBe('owner-1');
    expect(lease?.token).toBe(token);
    expect(lease!.expiresAt.getTime()).toBeGreaterThan(serverNow + 9_000);
    expect(lease!.expiresAt.getTime()).toBeLessThanOrEqual(serverNow + 10_050);
  });

  describe('fencedSet', () => {
    it('writes when the token is >= the highest seen, refuses a lower one with STALE_TOKEN and writes nothing', async () => {
      const store = new RedisLockStore(client, { prefix: 'fence:' });
      await store.fencedSet('report', 10, 'latest', 'v10');
      await store.fencedSet('report', 10, 'latest', 'v10-again'); // the same holder writes twice
      await store.fencedSet('report', 12, 'other', 'v12');
      let caught: unknown;
      try {
        await store.fencedSet('report', 11, 'latest', 'stale');
      } catch (error) {
        caught = error;
      }
      expect(isStaleTokenError(caught)).toBe(true);
      expect(caught).toMatchObject({ code: 'STALE_TOKEN', resource: 'report', token: 11, highestToken: 12 });
      expect(await store.fencedGet('report', 'latest')).toBe('v10-again');
      expect(await store.highestFencedToken('report')).toBe(12);
      // Resources are fenced independently.
      await store.fencedSet('other-resource', 1, 'latest', 'v1');
      expect(await store.fencedGet('other-resource', 'latest')).toBe('v1');
      expect(await store.fencedGet('report', 'missing')).toBeUndefined();
    });

    it('sets an expiry when asked', async () => {
      const store = new RedisLockStore(client, { prefix: 'fence-ttl:' });
      await store.fencedSet('cache', 1, 'entry', 'v', { ttl: '10s' });
      const pttl = await admin.pttl('fence-ttl:{cache}:value:entry');
      expect(pttl).toBeGreaterThan(9_000);
      expect(pttl).toBeLessThanOrEqual(10_000);
      expect(await admin.pttl('fence-ttl:{cache}:fence')).toBe(-1);
    });
  });

  describe('run ledger', () => {
    it('returns only the public fields of a record, numbers as numbers (16-digit tokens exact), the error as written', async () => {
      const store = new RedisLockStore(client, { prefix: 'ledger:' });
      const lease = await grantOf(store, { job: 'sync', instance: 'host:42' });
      // Tokens are seeded from the server clock in microseconds: beyond cjson's 14 digits.
      expect(lease.token).toBeGreaterThan(1e15);
      const error = 'upstream said "no" \\ ü 🚫';
      await store.finishOccurrence(lease, { outcome: 'failure', error });
      const [record, ...rest] = await store.runHistory('sync');
      expect(rest).toEqual([]);
      expect(Object.keys(record!).sort()).toEqual(
        ['endedAt', 'error', 'instance', 'job', 'outcome', 'scheduledAt', 'startedAt', 'token'].sort(),
      );
      expect(record).toMatchObject({
        job: 'sync',
        scheduledAt: lease.scheduledAt,
        outcome: 'failure',
        token: lease.token,
        instance: 'host:42',
        error,
      });
      const serverNow = await store.now();
      expect(record!.startedAt).toBeGreaterThan(serverNow - 5_000);
      expect(record!.endedAt).toBeGreaterThanOrEqual(record!.startedAt!);
      expect(record!.endedAt).toBeLessThanOrEqual(serverNow);
      expect(await store.lastCompleted('sync')).toBeUndefined();
    });

    it('refuses a stale finish with StaleTokenError naming the job and both tokens, and still frees its lease', async () => {
      const store = new RedisLockStore(client, { prefix: 'ledger-stale:' });
      const dead = await grantOf(store, { job: 'sync', ttlMs: 200 });
      await sleep(300);
      const successor = await claimOf(store, { job: 'sync', scheduledAt: dead.scheduledAt, ttlMs: 200 });
      expect(successor).toMatchObject({ status: 'granted', takeover: true });
      if (successor.status !== 'granted') return;
      let caught: unknown;
      try {
        await store.finishOccurrence(dead, { outcome: 'success' });
      } catch (error) {
        caught = error;
      }
      expect(isStaleTokenError(caught)).toBe(true);
      expect(caught).toMatchObject({
        code: 'STALE_TOKEN',
        resource: 'sync',
        token: dead.token,
        highestToken: successor.lease.token,
      });
      expect(await store.runHistory('sync')).toMatchObject([
        { outcome: 'running', token: successor.lease.token },
      ]);
      // A holder whose finish is refused after it reclaimed nothing: its own lease is freed all the same.
      const lease = await grantOf(store, { job: 'other' });
      await expect(
        store.finishOccurrence({ ...lease, token: lease.token - 1 }, { outcome: 'success' }),
      ).rejects.toSatisfy(isStaleTokenError);
      expect(await store.inspect('other')).toBeUndefined();
      expect(await store.runHistory('other')).toMatchObject([{ outcome: 'running', token: lease.token }]);
    });

    it('drops records past the retention when one finishes, looking at 100 per call, never a running one', async () => {
      const store = new RedisLockStore(client, { prefix: 'ledger-trim:' });
      const old = Math.floor((Date.now() - 2 * 3_600_000) / 1_000) * 1_000;
      const running = await grantOf(store, {
        job: 'trim',
        scheduledAt: old - 1_000,
        startingDeadlineMs: 3 * 3_600_000,
        overlap: 'allow-all',
      });
      // 150 occurrences missed two hours ago: one skipped record each. (A record limit above them
      // all: this is about the retention.)
      const recordLimit = 1_000;
      for (let index = 0; index < 150; index++) {
        expect(
          await claimOf(store, { job: 'trim', scheduledAt: old + index, startingDeadlineMs: 0, recordLimit }),
        ).toEqual({
          status: 'skipped',
          reason: 'missed',
        });
      }
      const count = async () => (await store.runHistory('trim', { limit: 1_000 })).length;
      expect(await count()).toBe(151);
      const finish = async () =>
        store.finishOccurrence(
          await grantOf(store, {
            job: 'trim',
            overlap: 'allow-all',
            scheduledAt: Date.now() - 1_000 - Math.floor(Math.random() * 1_000),
          }),
          { outcome: 'success' },
          { retentionMs: 3_600_000, recordLimit },
        );
      await finish();
      // The 100 oldest, the running one among them, which stays.
      expect(await count()).toBe(151 - 99 + 1);
      await finish();
      const left = await store.runHistory('trim', { limit: 1_000 });
      expect(left.filter((record) => record.scheduledAt < Date.now() - 3_600_000)).toMatchObject([
        { scheduledAt: running.scheduledAt, outcome: 'running' },
      ]);
      expect(left).toHaveLength(3);
    });

    it(`keeps at most ledgerRecordLimit (${ledgerRecordLimit}) records per job: a skip or a finish drops the oldest`, async () => {
      const store = new RedisLockStore(client, { prefix: 'ledger-limit:' });
      const first = Math.floor((Date.now() - 3_600_000) / 1_000) * 1_000;
      const batch = 500;
      const extra = 40;
      // Missed occurrences, one skipped record each; each skip trims as a finish does.
      for (let start = 0; start < ledgerRecordLimit + extra; start += batch) {
        await Promise.all(
          Array.from({ length: Math.min(batch, ledgerRecordLimit + extra - start) }, (_, index) =>
            claimOf(store, { job: 'limit', scheduledAt: first + start + index, startingDeadlineMs: 0 }),
          ),
        );
      }
      // The records and the job's version counter (field `v`).
      expect(await admin.hlen('ledger-limit:{limit}:occ:limit')).toBe(ledgerRecordLimit + 1);
      const lease = await grantOf(store, { job: 'limit' });
      await store.finishOccurrence(lease, { outcome: 'success' });
      // With the key's current occurrence since the grant (field `c`).
      expect(await admin.hlen('ledger-limit:{limit}:occ:limit')).toBe(ledgerRecordLimit + 2);
      expect(await admin.exists('ledger-limit:{limit}:idx:limit')).toBe(0);
      const kept = await store.runHistory('limit', { limit: ledgerRecordLimit });
      expect(kept.at(-1)?.scheduledAt).toBe(first + extra + 1);
      expect(kept[0]).toMatchObject({ scheduledAt: lease.scheduledAt, outcome: 'success' });
    });

    it('takes over an occurrence left running while another job sharing its key held the key since', async () => {
      const store = new RedisLockStore(client, { prefix: 'ledger-orphan:' });
      const at = Math.floor((Date.now() - 2_000) / 1_000) * 1_000;
      const dead = await grantOf(store, { job: 'a', key: 'shared', scheduledAt: at, ttlMs: 200 });
      await sleep(300);
      const other = await grantOf(store, { job: 'b', key: 'shared', scheduledAt: at });
      await store.finishOccurrence(other, { outcome: 'success' });
      // The key now names no occurrence of `a`: its running one is still abandoned, and taken over.
      const result = await claimOf(store, { job: 'a', key: 'shared', scheduledAt: at });
      expect(result).toMatchObject({ status: 'granted', takeover: true, lease: { scheduledAt: at } });
      if (result.status !== 'granted') return;
      expect(result.lease.token).toBeGreaterThan(other.token);
      await expect(store.finishOccurrence(dead, { outcome: 'success' })).rejects.toSatisfy(isStaleTokenError);
    });

    it('keeps a renewed lease alive on the key: the lease key is renewed with the occurrence', async () => {
      const store = new RedisLockStore(client, { prefix: 'ledger-renew:' });
      const lease = await grantOf(store, { job: 'r', ttlMs: 1_000 });
      expect(await store.renewOccurrence(lease, 10_000)).toBe(true);
      expect(await admin.pttl('ledger-renew:{r}:lease')).toBeGreaterThan(5_000);
      const perOccurrence = await grantOf(store, { job: 'p', overlap: 'allow-all', ttlMs: 1_000 });
      expect(await store.renewOccurrence(perOccurrence, 10_000)).toBe(true);
      // allow-all: the occurrence's own lease, in its record; the key stays free for others.
      expect(await admin.exists('ledger-renew:{p}:lease')).toBe(0);
      expect(await store.acquire('p', 'plain', ttl)).toBeGreaterThan(perOccurrence.token);
    });
  });
});

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore waitForReplicas (WAIT)', () => {
  let master: RedisServer;
  let replica: RedisServer;
  let client: Redis;
  let replicaClient: Redis;
  beforeAll(async () => {
    master = await startRedisServer();
    replica = await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
    client = new Redis(master.url);
    replicaClient = new Redis(replica.url);
    // Bounded by the test's hook timeout; a fresh replica syncs in well under a second.
    for (;;) {
      const info = await replicaClient.info('replication');
      if (info.includes('master_link_status:up')) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
  afterAll(async () => {
    client?.disconnect();
    replicaClient?.disconnect();
    await replica?.stop();
    await master?.stop();
  });

  it('returns a token only once the lease and the token are on the replica', async () => {
    const store = new RedisLockStore(client, { prefix: 'wait:', waitForReplicas: 1, replicaTimeout: 500 });
    const token = await store.acquire('k', 'a', ttl);
    // WAIT returned, so the replica already applied both writes: no polling needed.
    expect(await replicaClient.get('wait:{k}:lease')).toBe('a');
    expect(await replicaClient.get('wait:{k}:token')).toBe(String(token));
    expect(await store.renew('k', 'a', ttl)).toBe(true);
    await store.fencedSet('r', token!, 'v', 'x');
    expect(await replicaClient.get('wait:{r}:value:v')).toBe('x');
  });

  it('returns a claim, a renewal and a finish only once the replica has them', async () => {
    const store = new RedisLockStore(client, {
      prefix: 'wait-ledger:',
      waitForReplicas: 1,
      replicaTimeout: 500,
    });
    const lease = await grantOf(store, { job: 'j' });
    const field = String(lease.scheduledAt);
    expect(await replicaClient.get('wait-ledger:{j}:lease')).toBe(lease.owner);
    expect(JSON.parse((await replicaClient.hget('wait-ledger:{j}:occ:j', field))!)).toMatchObject({
      outcome: 'running',
    });
    expect(await store.renewOccurrence(lease, ttl)).toBe(true);
    await store.finishOccurrence(lease, { outcome: 'success' });
    expect(JSON.parse((await replicaClient.hget('wait-ledger:{j}:occ:j', field))!)).toMatchObject({
      outcome: 'success',
    });
    expect(await replicaClient.exists('wait-ledger:{j}:lease')).toBe(0);
  });

  it('fails a ledger write with StoreUnavailableError when too few replicas acknowledge it', async () => {
    const store = new RedisLockStore(client, {
      prefix: 'wait-ledger2:',
      waitForReplicas: 2,
      replicaTimeout: 100,
    });
    let caught: unknown;
    try {
      await claimOf(store, { job: 'j' });
    } catch (error) {
      caught = error;
    }
    expect(isStoreUnavailableError(caught)).toBe(true);
    expect((caught as Error).message).toMatch(
      /claimOccurrence for "j" reached 1 of 2 replicas within 100 ms/,
    );
  });

  it('fails with StoreUnavailableError and gives the lease back when too few replicas acknowledge', async () => {
    const store = new RedisLockStore(client, { prefix: 'wait2:', waitForReplicas: 2, replicaTimeout: 100 });
    const startedAt = performance.now();
    let caught: unknown;
    try {
      await store.acquire('k', 'a', ttl);
    } catch (error) {
      caught = error;
    }
    expect(isStoreUnavailableError(caught)).toBe(true);
    expect((caught as Error).message).toMatch(/acquire for "k" reached 1 of 2 replicas within 100 ms/);
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    expect(await store.inspect('k')).toBeUndefined();
  });
});
