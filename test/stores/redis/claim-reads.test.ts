/**
 * What a claim reads on Redis, counted on a private server's INFO commandstats: a claim whose
 * occurrence is done, or running under a live lease, reads that record alone (one HMGET, beside
 * the batch's TIME); a claim that may be granted reads the job's whole view, unless the process
 * knows it from its own last write of the job (then it writes alone, as a renewal and a finish
 * after the process's own grant do). And the index of
 * running occurrences (`running:<job>`, read by claims with a `concurrency` above 1) holds an
 * occurrence only while it runs, whichever claim or finish ends it.
 */
import { Redis } from 'ioredis';
import type { ClaimRequest } from 'resil';
import { RedisLockStore } from 'resil/redis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { privateRedisUnavailableReason, type RedisServer, startRedisServer } from '../../support/redis.ts';

describe.skipIf(privateRedisUnavailableReason())('RedisLockStore: what a claim reads', () => {
  let server: RedisServer;
  let client: Redis;
  let store: RedisLockStore;

  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
    store = new RedisLockStore(client, { prefix: 'reads:' });
  });
  afterAll(async () => {
    await client?.quit();
    await server?.stop();
  });

  /** The commands the server ran (scripts' included) while `action` ran, by name. */
  const commandsOf = async (action: () => Promise<unknown>): Promise<Record<string, number>> => {
    await client.config('RESETSTAT');
    await action();
    const stats = await client.info('commandstats');
    const counts: Record<string, number> = {};
    for (const [, name, calls] of stats.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
      if (!name!.startsWith('config') && name !== 'info') counts[name!] = Number(calls);
    }
    return counts;
  };
  const at = Math.floor(Date.now() / 1_000) * 1_000 - 5_000;
  const request = (overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
    job: 'report',
    key: 'report',
    scheduledAt: at,
    owner: `owner-${Math.random()}`,
    instance: 'web-1',
    ttlMs: 10_000,
    overlap: 'skip',
    startingDeadlineMs: 60_000,
    ...overrides,
  });

  it("the claim of a new job's occurrence: a write alone, decided on an empty view presumed for a job this process knows nothing of; its finish: a write alone", async () => {
    // The scripts loaded first (a server's first use of one is EVALSHA, NOSCRIPT, then EVAL).
    const warmUp = await store.claimOccurrence(request({ job: 'warm-up', key: 'warm-up' }));
    if (warmUp.status === 'granted') await store.finishOccurrence(warmUp.lease, { outcome: 'success' });
    const job = { job: 'fresh', key: 'fresh' } as const;
    let claim: Awaited<ReturnType<RedisLockStore['claimOccurrence']>> | undefined;
    const claiming = await commandsOf(async () => {
      claim = await store.claimOccurrence(request(job));
    });
    if (claim?.status !== 'granted') throw new Error(JSON.stringify(claim));
    expect(claiming).toEqual({
      evalsha: 1,
      // The empty view checked: the record with the counter (neither there), then nothing of the
      // key's lease and token, an earlier release's index of the job, its pause (one EXISTS); then
      // the lease, the token (a new key's counter, seeded from the script's TIME), and the record
      // with the counter and the key's current occurrence (one HSET).
      time: 1,
      hmget: 1,
      exists: 1,
      set: 2,
      hset: 1,
    });
    const { lease } = claim;
    const finishing = await commandsOf(() => store.finishOccurrence(lease, { outcome: 'success' }));
    expect(finishing).toEqual({
      evalsha: 1,
      time: 1,
      // The version's parts (the lease with the key's token and its waiters key; the records with
      // the counter), the record with the current occurrence emptied, the lease freed (with an
      // earlier release's current occurrence: one DEL). Nobody waits on the key: nothing
      // published. Not the index of running occurrences: its record says it never joined it
      // (granted to a claim with a concurrency of 1).
      mget: 1,
      hmget: 1,
      hset: 1,
      del: 1,
    });
  });

  it("a release publishes on the key's channel while someone waits on the key, and only then", async () => {
    const job = { job: 'awaited', key: 'awaited' } as const;
    const first = await store.claimOccurrence(request(job));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    let woken = 0;
    let resolve = () => {};
    const marked = new Promise<void>((done) => {
      resolve = done;
    });
    const unsubscribe = store.onRelease('awaited', () => {
      woken++;
      resolve();
    });
    // Woken once the subscription and the waiters key are in place (a release may have come before).
    await marked;
    expect(await client.pttl('reads:{awaited}:waiters')).toBeGreaterThan(20_000);
    const before = woken;
    const finishing = await commandsOf(() => store.finishOccurrence(first.lease, { outcome: 'success' }));
    expect(finishing.publish).toBe(1);
    await vi.waitFor(() => expect(woken).toBeGreaterThan(before));
    unsubscribe();
    await client.del('reads:{awaited}:waiters');
    const second = await store.claimOccurrence(request({ ...job, scheduledAt: at + 1_000 }));
    if (second.status !== 'granted') throw new Error(JSON.stringify(second));
    const quiet = await commandsOf(() => store.finishOccurrence(second.lease, { outcome: 'success' }));
    expect(quiet.publish).toBeUndefined();
  });

  it('a claim of a finished occurrence reads its record alone; a manual run or a backfill reads the view', async () => {
    const granting = await commandsOf(async () => {
      const claim = await store.claimOccurrence(request());
      if (claim.status !== 'granted') throw new Error(JSON.stringify(claim));
      await store.finishOccurrence(claim.lease, { outcome: 'success' });
    });
    // The first claim of a job new to this process: a write on the view presumed empty, and the
    // finish a write on the view that grant left.
    expect(granting.evalsha).toBe(2);

    const done = await commandsOf(async () => {
      expect(await store.claimOccurrence(request())).toEqual({ status: 'skipped', reason: 'already-done' });
    });
    expect(done).toEqual({ evalsha: 1, time: 1, hmget: 1 });

    // A backfill of a done occurrence answers the same, from the whole view.
    const backfill = await commandsOf(async () => {
      expect(await store.claimOccurrence(request({ trigger: 'backfill' }))).toEqual({
        status: 'skipped',
        reason: 'already-done',
      });
    });
    expect(backfill.exists).toBe(1);
    // A manual run at the same instant is a new run.
    const manual = await store.claimOccurrence(request({ manual: true, trigger: 'manual' }));
    if (manual.status !== 'granted') throw new Error(JSON.stringify(manual));
    await store.finishOccurrence(manual.lease, { outcome: 'success' });
  });

  it('a claim of an occurrence running elsewhere under a live lease reads its record alone, and waits', async () => {
    const running = await store.claimOccurrence(request({ scheduledAt: at + 1_000 }));
    expect(running.status).toBe('granted');
    const watching = await commandsOf(async () => {
      expect(await store.claimOccurrence(request({ scheduledAt: at + 1_000 }))).toMatchObject({
        status: 'wait',
        runningElsewhere: true,
      });
    });
    expect(watching).toEqual({ evalsha: 1, time: 1, hmget: 1 });
  });

  it('a claim of a queued occurrence reads its record, then the whole view', async () => {
    // A job of its own: the occurrence above still holds the key of 'report'.
    const job = { job: 'digest', key: 'digest', overlap: 'buffer-one' } as const;
    const holder = await store.claimOccurrence(request({ ...job, scheduledAt: at + 2_000 }));
    expect(holder.status).toBe('granted');
    const queued = request({ ...job, scheduledAt: at + 3_000 });
    expect(await store.claimOccurrence(queued)).toMatchObject({ status: 'wait', runningElsewhere: false });
    const again = await commandsOf(async () => {
      expect(await store.claimOccurrence(queued)).toMatchObject({ status: 'wait', runningElsewhere: false });
    });
    // The record first (one script), then the view (a second): the lease with the key's token, the
    // pause, the queue.
    expect(again.evalsha).toBe(2);
    expect(again.mget).toBeGreaterThanOrEqual(1);
    expect(again.exists).toBe(1);
    if (holder.status === 'granted') await store.finishOccurrence(holder.lease, { outcome: 'success' });
  });
  it("the renewal and the finish after a process's own grant, and the job's next fire, are each a write alone, on the view that grant left", async () => {
    const job = { job: 'nightly', key: 'nightly' } as const;
    const first = await store.claimOccurrence(request({ ...job, scheduledAt: at }));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    const renew = await commandsOf(async () =>
      expect(await store.renewOccurrence(first.lease, 10_000)).toBe(true),
    );
    expect(renew.evalsha).toBe(1);
    const finish = await commandsOf(() => store.finishOccurrence(first.lease, { outcome: 'success' }));
    // One script, and no read of the history: the trim was decided on what the process knew.
    expect(finish.evalsha).toBe(1);
    expect(finish.zcard).toBeUndefined();
    let second: Awaited<ReturnType<RedisLockStore['claimOccurrence']>> | undefined;
    const next = await commandsOf(async () => {
      second = await store.claimOccurrence(request({ ...job, scheduledAt: at + 1_000 }));
    });
    expect(second).toMatchObject({ status: 'granted', takeover: false });
    expect(next.evalsha).toBe(1);
    if (second?.status !== 'granted') throw new Error(JSON.stringify(second));
    expect(second.lease.token).toBeGreaterThan(first.lease.token);
    await store.finishOccurrence(second.lease, { outcome: 'failure', error: 'boom' });
    expect(await store.runHistory('nightly')).toMatchObject([
      { scheduledAt: at + 1_000, outcome: 'failure', error: 'boom', token: second.lease.token },
      { scheduledAt: at, outcome: 'success', token: first.lease.token },
    ]);
  });

  it("the next fire's claim, sent just after its instant, is a write alone: decided at the instant, which the store checks it has reached", async () => {
    const job = { job: 'every-second', key: 'every-second' } as const;
    const first = await store.claimOccurrence(request({ ...job, scheduledAt: at }));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    await store.finishOccurrence(first.lease, { outcome: 'success' });
    // An instant 50 ms ahead by the server's clock, claimed right after it (this process and the
    // server share the machine's clock).
    const instant = Math.ceil(await store.now()) + 50;
    while (Date.now() < instant - 2) await new Promise((resolve) => setTimeout(resolve, 1));
    while (Date.now() < instant);
    let second: Awaited<ReturnType<RedisLockStore['claimOccurrence']>> | undefined;
    const next = await commandsOf(async () => {
      second = await store.claimOccurrence(request({ ...job, scheduledAt: instant }));
    });
    expect(second).toMatchObject({ status: 'granted' });
    // What the process knows of the server's time trails it by the reply's way back and a slack:
    // decided at that time the claim would not be due yet, and the process would read first.
    expect(next).toMatchObject({ evalsha: 1 });
    expect(next.zrange).toBeUndefined();
    if (second?.status === 'granted') await store.finishOccurrence(second.lease, { outcome: 'success' });
  });

  it('a write by another instance in between: the write on what the process knew is refused, and the operation read and decided again', async () => {
    const other = new RedisLockStore(client, { prefix: 'reads:' });
    const job = { job: 'weekly', key: 'weekly' } as const;
    const first = await store.claimOccurrence(request({ ...job, scheduledAt: at }));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    // A pause moves the job's counter on.
    await other.pauseJob('weekly', { key: 'weekly', by: 'ops' });
    const finish = await commandsOf(() => store.finishOccurrence(first.lease, { outcome: 'success' }));
    // The refused write, then a read and a write.
    expect(finish.evalsha).toBe(3);
    expect(await store.runHistory('weekly')).toMatchObject([{ scheduledAt: at, outcome: 'success' }]);
    // The next fire meets the pause, which the view read since says.
    expect(await store.claimOccurrence(request({ ...job, scheduledAt: at + 1_000 }))).toEqual({
      status: 'skipped',
      reason: 'paused',
    });
    await other.resumeJob('weekly', { key: 'weekly' });

    // Its lease ran out and another instance took the occurrence over: the finish is refused as stale.
    const short = await store.claimOccurrence(request({ ...job, scheduledAt: at + 2_000, ttlMs: 100 }));
    if (short.status !== 'granted') throw new Error(JSON.stringify(short));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const taken = await other.claimOccurrence(request({ ...job, scheduledAt: at + 2_000, owner: 'other' }));
    if (taken.status !== 'granted') throw new Error(JSON.stringify(taken));
    expect(taken.takeover).toBe(true);
    await expect(store.finishOccurrence(short.lease, { outcome: 'success' })).rejects.toThrow(/token/i);
    await other.finishOccurrence(taken.lease, { outcome: 'success' });
    expect((await store.runHistory('weekly'))[0]).toMatchObject({
      scheduledAt: at + 2_000,
      outcome: 'success',
      token: taken.lease.token,
    });
  });

  it("a fire another instance won since this process's last write of the job: the refused write returns the record, which answers the claim", async () => {
    const other = new RedisLockStore(client, { prefix: 'reads:' });
    const job = { job: 'hourly', key: 'hourly' } as const;
    const first = await store.claimOccurrence(request({ ...job, scheduledAt: at }));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    await store.finishOccurrence(first.lease, { outcome: 'success' });
    // The next fire: the other instance is granted it first.
    const won = await other.claimOccurrence(request({ ...job, scheduledAt: at + 1_000, owner: 'other' }));
    if (won.status !== 'granted') throw new Error(JSON.stringify(won));
    let lost: Awaited<ReturnType<RedisLockStore['claimOccurrence']>> | undefined;
    const losing = await commandsOf(async () => {
      lost = await store.claimOccurrence(request({ ...job, scheduledAt: at + 1_000 }));
    });
    expect(lost).toMatchObject({ status: 'wait', runningElsewhere: true });
    // One script, as a claim that reads the record first costs.
    expect(losing).toEqual({ evalsha: 1, time: 1, hmget: 1 });
    await other.finishOccurrence(won.lease, { outcome: 'success' });
    expect(await store.claimOccurrence(request({ ...job, scheduledAt: at + 1_000 }))).toEqual({
      status: 'skipped',
      reason: 'already-done',
    });
  });

  it('a job presumed new that has a ledger (another instance wrote it, or this process restarted): the write on the empty view is refused, and the claim reads and decides, once per job', async () => {
    const job = { job: 'monthly', key: 'monthly' } as const;
    const first = await store.claimOccurrence(request({ ...job, scheduledAt: at }));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    await store.finishOccurrence(first.lease, { outcome: 'success' });
    // A process new to the job, which has seen the server's time.
    const restarted = new RedisLockStore(client, { prefix: 'reads:' });
    await restarted.now();
    // The fire it missed: the refused write carries the record, which answers the claim (as the
    // other instances of a fleet find each occurrence one instance ran).
    const done = await commandsOf(async () => {
      expect(await restarted.claimOccurrence(request({ ...job, scheduledAt: at }))).toEqual({
        status: 'skipped',
        reason: 'already-done',
      });
    });
    expect(done).toEqual({ evalsha: 1, time: 1, hmget: 1 });
    // Its next fire: no record yet, so the refused write answers nothing; then a read (the record,
    // then the view, in one script) and the grant.
    const restarted2 = new RedisLockStore(client, { prefix: 'reads:' });
    await restarted2.now();
    let next: Awaited<ReturnType<RedisLockStore['claimOccurrence']>> | undefined;
    const claiming = await commandsOf(async () => {
      next = await restarted2.claimOccurrence(request({ ...job, scheduledAt: at + 1_000 }));
    });
    if (next?.status !== 'granted') throw new Error(JSON.stringify(next));
    expect(next.takeover).toBe(false);
    expect(next.lease.token).toBeGreaterThan(first.lease.token);
    expect(claiming.evalsha).toBe(3);
    await restarted2.finishOccurrence(next.lease, { outcome: 'success' });
    expect((await store.runHistory('monthly')).map((record) => record.outcome)).toEqual([
      'success',
      'success',
    ]);
  });

  it('a job presumed new is not granted while a plain lock holds its key, nor while it is paused, nor over a pause or records an earlier release wrote without the counter', async () => {
    const fresh = new RedisLockStore(client, { prefix: 'reads:' });
    await fresh.now();
    // A plain lock on the key: the lease's owner is part of the version the write checks.
    const token = await store.acquire('locked', 'someone', 10_000);
    expect(token).toBeGreaterThan(0);
    // With overlap 'skip', a key held elsewhere skips the fire.
    expect(await fresh.claimOccurrence(request({ job: 'locked', key: 'locked' }))).toEqual({
      status: 'skipped',
      reason: 'overlap',
    });
    await store.release('locked', 'someone');
    // A pause of a job never run seeds its counter: the empty view no longer matches.
    await store.pauseJob('held', { key: 'held', by: 'ops' });
    expect(await fresh.claimOccurrence(request({ job: 'held', key: 'held' }))).toEqual({
      status: 'skipped',
      reason: 'paused',
    });
    await store.resumeJob('held', { key: 'held' });
    // A pause an earlier release set (it did not seed the job's counter), and records it wrote.
    await client.hset('reads:{paused-before}:paused:paused-before', 'pausedAt', String(at), 'by', 'ops');
    expect(await fresh.claimOccurrence(request({ job: 'paused-before', key: 'paused-before' }))).toEqual({
      status: 'skipped',
      reason: 'paused',
    });
    const earlier = at - 60_000;
    await client.hset(
      'reads:{ran-before}:occ:ran-before',
      String(earlier),
      JSON.stringify({ job: 'ran-before', scheduledAt: String(earlier), outcome: 'success' }),
    );
    await client.zadd('reads:{ran-before}:idx:ran-before', earlier, String(earlier));
    // Not presumed new: refused, then read (the record with the view) and written.
    let after: Awaited<ReturnType<RedisLockStore['claimOccurrence']>> | undefined;
    const claiming = await commandsOf(async () => {
      after = await fresh.claimOccurrence(request({ job: 'ran-before', key: 'ran-before' }));
    });
    if (after?.status !== 'granted') throw new Error(JSON.stringify(after));
    expect(claiming.evalsha).toBe(3);
    await fresh.finishOccurrence(after.lease, { outcome: 'success' });
  });

  it("an occurrence an earlier release granted (the key's current hash, no `c` in the records) and left running is still taken over", async () => {
    const job = { job: 'upgraded', key: 'upgraded' } as const;
    const records = 'reads:{upgraded}:occ:upgraded';
    const first = await store.claimOccurrence(request(job));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    // As an earlier release leaves it when its instance dies: the occurrence in the key's
    // `current` hash, the lease run out.
    await client.hdel(records, 'c');
    await client.hset('reads:{upgraded}:current', 'job', 'upgraded', 'at', String(at));
    await client.del('reads:{upgraded}:lease');
    const fresh = new RedisLockStore(client, { prefix: 'reads:' });
    const next = await fresh.claimOccurrence(
      request({ ...job, scheduledAt: at + 1_000, overlap: 'buffer-one' }),
    );
    expect(next).toMatchObject({ status: 'granted', lease: { scheduledAt: at }, takeover: true });
    if (next.status !== 'granted') return;
    expect(next.lease.token).toBeGreaterThan(first.lease.token);
    expect(await client.hget(records, 'c')).toBe(`${at} ${next.lease.token}`);
    await fresh.finishOccurrence(next.lease, { outcome: 'success' });
    // Released: the current occurrence emptied, the earlier release's hash gone with the lease.
    expect(await client.hget(records, 'c')).toBe(` ${next.lease.token}`);
    expect(await client.exists('reads:{upgraded}:current', 'reads:{upgraded}:lease')).toBe(0);
  });

  it("a grant that does not take the key's lease (a forced manual run, a job sharing the key with allow-all) leaves the current occurrence current: taken over, or cancelled by cancel-other", async () => {
    const records = (job: string, key: string) => `reads:{${key}}:occ:${job}`;
    // A forced manual run while an occurrence holds the key, then that occurrence's lease runs out.
    const first = await store.claimOccurrence(request({ job: 'forced', key: 'forced' }));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    const forced = await store.claimOccurrence(
      request({ job: 'forced', key: 'forced', scheduledAt: at + 500, manual: true, force: true }),
    );
    expect(forced).toMatchObject({ status: 'granted', lease: { scheduledAt: at + 500 } });
    expect(await client.get('reads:{forced}:held')).toBe(String(first.lease.token));
    await client.del('reads:{forced}:lease');
    const next = await new RedisLockStore(client, { prefix: 'reads:' }).claimOccurrence(
      request({ job: 'forced', key: 'forced', scheduledAt: at + 1_000, overlap: 'buffer-one' }),
    );
    expect(next).toMatchObject({ status: 'granted', lease: { scheduledAt: at }, takeover: true });
    if (next.status !== 'granted') return;
    // It took the lease: the key's held token is gone, the current occurrence is checked against the key's.
    expect(await client.exists('reads:{forced}:held')).toBe(0);
    expect(await client.hget(records('forced', 'forced'), 'c')).toBe(`${at} ${next.lease.token}`);

    // Another job under the same key, allow-all, granted while an occurrence holds it: a
    // cancel-other fire still finds the holder.
    const holder = await store.claimOccurrence(request({ job: 'holder', key: 'shared' }));
    if (holder.status !== 'granted') throw new Error(JSON.stringify(holder));
    const beside = await store.claimOccurrence(
      request({ job: 'beside', key: 'shared', overlap: 'allow-all' }),
    );
    expect(beside).toMatchObject({ status: 'granted' });
    const cancelling = await new RedisLockStore(client, { prefix: 'reads:' }).claimOccurrence(
      request({ job: 'holder', key: 'shared', scheduledAt: at + 1_000, overlap: 'cancel-other' }),
    );
    expect(cancelling).toMatchObject({ status: 'wait' });
    expect(JSON.parse((await client.hget(records('holder', 'shared'), String(at)))!)).toMatchObject({
      cancelled: true,
    });
  });

  it('the latest success is read from the records, newest first, past failures and skips (more than one page of them), and none is kept apart from them', async () => {
    const job = { job: 'flaky', key: 'flaky' } as const;
    // Past instants, all inside the starting deadline.
    const base = at - 30_000;
    const run = async (offset: number, outcome: 'success' | 'failure') => {
      const claim = await store.claimOccurrence(request({ ...job, scheduledAt: base + offset }));
      if (claim.status !== 'granted') throw new Error(JSON.stringify(claim));
      await store.finishOccurrence(
        claim.lease,
        outcome === 'success' ? { outcome } : { outcome, error: 'boom' },
      );
    };
    expect(await store.lastCompleted('flaky')).toBeUndefined();
    await run(0, 'success');
    await run(1_000, 'success');
    // Twelve failures after it, and a skip (a paused fire): more than the first page of ten.
    for (let index = 2; index < 14; index++) await run(index * 1_000, 'failure');
    await store.pauseJob('flaky', { key: 'flaky', by: 'ops' });
    expect(await store.claimOccurrence(request({ ...job, scheduledAt: base + 14_000 }))).toEqual({
      status: 'skipped',
      reason: 'paused',
    });
    await store.resumeJob('flaky', { key: 'flaky' });
    expect(await store.lastCompleted('flaky')).toBe(base + 1_000);
    expect(await client.exists('reads:{flaky}:succeeded:flaky')).toBe(0);
    await run(15_000, 'success');
    expect(await store.lastCompleted('flaky')).toBe(base + 15_000);
  });

  it("after a restart that lost the data, the job's counter starts from the server's time: a view known before never matches it again", async () => {
    const job = { job: 'lost', key: 'lost', concurrency: 2 } as const;
    const other = new RedisLockStore(client, { prefix: 'reads:' });
    // This process ran the job last: it knows its ledger (no lease, no current occurrence: a
    // `concurrency` above 1), and the counter its two writes left.
    const first = await store.claimOccurrence(request(job));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    await store.finishOccurrence(first.lease, { outcome: 'success' });
    // The data is lost; another instance then fills the job's two places.
    const keys = await client.keys('reads:{lost}:*');
    await client.del(...keys);
    const [seconds] = await client.time();
    for (const offset of [1_000, 2_000]) {
      const claim = await other.claimOccurrence(request({ ...job, scheduledAt: at + offset }));
      expect(claim.status).toBe('granted');
    }
    // Seeded from TIME in microseconds, not counted again from 1 (where two writes lead back to
    // the value this process knew).
    expect(Number(await client.hget('reads:{lost}:occ:lost', 'v'))).toBeGreaterThanOrEqual(
      Number(seconds) * 1_000_000,
    );
    // Decided on what this process knew, a third claim would be granted: the store refuses that
    // write, and the claim is decided again on what it reads.
    expect(await store.claimOccurrence(request({ ...job, scheduledAt: at + 3_000 }))).toMatchObject({
      status: 'skipped',
    });
    expect(await client.zcard('reads:{lost}:running:lost')).toBe(2);
  });

  it('a bounded occurrence taken over by a claim with concurrency 1 (a config change) leaves the running index when that run finishes', async () => {
    const running = () => client.zrange('reads:{sync}:running:sync', 0, -1);
    const job = { job: 'sync', key: 'sync' } as const;
    const first = await store.claimOccurrence(request({ ...job, concurrency: 2, ttlMs: 100 }));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    expect(await running()).toEqual([String(at)]);
    // Its holder is gone: the lease runs out on the server's clock.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const takeover = await store.claimOccurrence(request(job));
    if (takeover.status !== 'granted') throw new Error(JSON.stringify(takeover));
    expect(takeover.takeover).toBe(true);
    await store.finishOccurrence(takeover.lease, { outcome: 'success' });
    expect(await running()).toEqual([]);
  });

  it("a running occurrence outside that index says so in its record, until it ends; one of an earlier release's records (which does not) leaves the index when it ends", async () => {
    const job = { job: 'single', key: 'single' } as const;
    const records = 'reads:{single}:occ:single';
    const first = await store.claimOccurrence(request(job));
    if (first.status !== 'granted') throw new Error(JSON.stringify(first));
    expect(await client.hget(records, String(at))).toContain('"unindexed":true');
    expect(await store.renewOccurrence(first.lease, 10_000)).toBe(true);
    expect(await client.hget(records, String(at))).toContain('"unindexed":true');
    await store.finishOccurrence(first.lease, { outcome: 'success' });
    expect(await client.hget(records, String(at))).not.toContain('unindexed');
    expect(await store.runHistory('single')).toEqual([expect.not.objectContaining({ unindexed: true })]);
    // As an earlier release leaves a bounded occurrence: in the index, its record without the mark.
    const second = await store.claimOccurrence(request({ ...job, scheduledAt: at + 1_000 }));
    if (second.status !== 'granted') throw new Error(JSON.stringify(second));
    const record = (await client.hget(records, String(at + 1_000)))!;
    await client.hset(records, String(at + 1_000), record.replace(',"unindexed":true', ''));
    await client.zadd('reads:{single}:running:single', at + 1_000, String(at + 1_000));
    await store.finishOccurrence(second.lease, { outcome: 'success' });
    expect(await client.zrange('reads:{single}:running:single', 0, -1)).toEqual([]);
  });
});
