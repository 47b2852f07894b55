/**
 * A `resil run` instance frozen mid-run (a long GC pause, a suspended VM): SIGSTOP for longer than
 * the lock's ttl, then SIGCONT, with a second instance on the same Redis. The job writes through
 * the fencing helper (`RedisLockStore#fencedSet` with its token) and keeps its own ledger in a Redis
 * list ({ phase, scheduledAt, instance, token, at: Redis TIME }); the assertions are exact counts
 * over it and over each process's log lines.
 *
 * Timings: an every-second job working 300 ms, lock ttl 2 s and wait 6 s (>= ttl, so a loser waits
 * out a frozen holder), the holder paused within milliseconds of its start and resumed 4.5 s after
 * the occurrence's instant. About 11 s in all.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisLockStore } from 'resil/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureBuilt,
  fixturePreamble,
  type RunFixture,
  type RunProcess,
  startRun,
} from '../cli/run-process.ts';
import { waitUntil } from '../support/processes.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';

const redisUrl = await redisUrlForTests();

const job = 'tick';
/** Lease length: the frozen holder's lease expires this long after it was taken. */
const ttlMs = 2_000;
/**
 * How long a fire waits for the held lock (>= ttl: a loser waits out a dead or frozen holder
 * instead of skipping). Polls back off to 1 s, and up to four fires queue behind a frozen lease,
 * so each needs several polls after the lease expires.
 */
const waitMs = 6_000;
const workMs = 300;
/**
 * SIGCONT this long after the paused occurrence's instant: over twice the ttl (the lease has long
 * expired and the other instance has run since), and mid-second, clear of an occurrence boundary.
 */
const wakeAfterMs = 4_500;

/** One line of the job's own ledger. */
interface PausedRecord {
  /** `start`: run called; `done`: fenced write accepted; `stale`: fenced write refused; `aborted`: the job's signal aborted. */
  phase: 'start' | 'done' | 'stale' | 'aborted';
  scheduledAt: number;
  instance: string;
  token: number;
  /** Redis TIME when the record was written, ms. */
  at: number;
  /** `stale`: the error's code; `aborted`: the abort reason's code. */
  code?: string;
  /** `stale`: the highest token the fence had seen. */
  highest?: number;
}

/**
 * A config with one every-second job that records its start, works `workMs` without looking at
 * its signal (as a job that ignores it would: only the fence can stop its write), then writes
 * through `fencedSet` with its token and records whether the fence accepted the write.
 */
function writePausedFixture(prefix: string): RunFixture & { startsKey: string } {
  const directory = mkdtempSync(join(tmpdir(), 'resil-paused-'));
  const configPath = join(directory, 'resil.config.mjs');
  const recordKey = `${prefix}records`;
  // Start records again, for the test's BLPOP: it pauses the holder within milliseconds of its start.
  const startsKey = `${prefix}starts`;
  writeFileSync(
    configPath,
    `${fixturePreamble()}const store = new RedisLockStore(client, { prefix: ${JSON.stringify(prefix)}, commandTimeout: 500 });

async function record(phase, base, extra = {}) {
  const [seconds, micros] = await recorder.time();
  const entry = JSON.stringify({ phase, ...base, at: Number(seconds) * 1000 + Number(micros) / 1000, ...extra });
  const batch = recorder.multi().rpush(${JSON.stringify(recordKey)}, entry);
  if (phase === 'start') batch.rpush(${JSON.stringify(startsKey)}, entry);
  await batch.exec();
}

export default defineConfig({
  store,
  instance,
  timezone: 'UTC',
  shutdownGrace: 10_000,
  jobs: [
    {
      name: ${JSON.stringify(job)},
      schedule: '* * * * * *',
      lock: { ttl: ${ttlMs}, wait: ${waitMs} },
      run: async (ctx) => {
        const base = { scheduledAt: ctx.scheduledAt.getTime(), instance, token: ctx.token };
        // Listening before the first await: a process paused right after its start record may find
        // its signal aborted the moment it resumes, before that record's reply is read.
        ctx.signal.addEventListener('abort', () => {
          record('aborted', base, { code: ctx.signal.reason?.code }).catch(() => {});
        }, { once: true });
        await record('start', base);
        await new Promise((resolve) => setTimeout(resolve, ${workMs}));
        try {
          await store.fencedSet(${JSON.stringify(job)}, ctx.token, 'latest', JSON.stringify(base));
        } catch (error) {
          await record('stale', base, { code: error.code, highest: error.highestToken });
          throw error;
        }
        await record('done', base);
      },
    },
  ],
});
`,
  );
  return {
    directory,
    configPath,
    recordKey,
    startsKey,
    prefix,
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

describe.skipIf(!redisUrl)('a resil run instance paused mid-run (SIGSTOP) on a two-instance fleet', () => {
  let client: Redis;
  let watcher: Redis;
  let store: RedisLockStore;
  let fixture: (RunFixture & { startsKey: string }) | undefined;
  const processes: RunProcess[] = [];

  beforeAll(() => {
    ensureBuilt();
    client = new Redis(redisUrl!);
    // BLPOP blocks its connection: one of its own.
    watcher = new Redis(redisUrl!);
  }, 200_000);
  afterAll(async () => {
    await Promise.all(processes.map((run) => run.process.stop()));
    if (fixture) {
      await deleteKeys(client, fixture.prefix);
      fixture.remove();
    }
    await Promise.all([client.quit(), watcher.quit()]);
  });

  const redisNow = async () => {
    const [seconds, micros] = await client.time();
    return Number(seconds) * 1000 + Number(micros) / 1000;
  };
  const records = async () =>
    (await client.lrange(fixture!.recordKey, 0, -1)).map((entry) => JSON.parse(entry) as PausedRecord);
  const scheduledAtOf = (line: Record<string, unknown>) => Date.parse(String(line.scheduledAt));
  /** The one-line-per-fire log lines (success, failure, skipped) of `run`. */
  const fires = (run: RunProcess) =>
    run.lines().filter((line) => typeof line.outcome === 'string' && line.scheduledAt !== undefined);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('the other instance takes over while the holder is frozen past its ttl; the holder wakes to a lost lease, a refused stale write and no late runs', async () => {
    fixture = writePausedFixture(uniquePrefix('fleet-paused'));
    // The test's view of the fixture's store: the fence and the runner's run ledger.
    store = new RedisLockStore(client, { prefix: fixture.prefix });
    const fleet = ['a', 'b'].map((instance) => {
      const run = startRun(fixture!, { instance, redisUrl: redisUrl! });
      processes.push(run);
      return run;
    });
    await Promise.all(
      fleet.map((run) =>
        run.waitForLine((line) => String(line.msg).startsWith('runner started'), 15_000, 'the runner start'),
      ),
    );
    const from = Math.ceil((await redisNow()) / 1000) * 1000 + 1_000;

    // Two ordinary occurrences first, then pause whoever starts the next one, within ms of its start.
    let frozenStart: PausedRecord | undefined;
    const deadline = performance.now() + 15_000;
    while (frozenStart === undefined && performance.now() < deadline) {
      const popped = await watcher.blpop(fixture.startsKey, 1);
      const entry = popped === null ? undefined : (JSON.parse(popped[1]) as PausedRecord);
      if (entry !== undefined && entry.scheduledAt >= from + 2_000) frozenStart = entry;
    }
    expect(frozenStart, 'a start record to pause its instance on').toBeDefined();
    const s0 = frozenStart!.scheduledAt;
    const holder = fleet.find((run) => run.instance === frozenStart!.instance)!;
    const other = fleet.find((run) => run !== holder)!;
    holder.process.kill('SIGSTOP');
    const frozenAt = await redisNow();
    // The fence says whether the holder's write landed before the pause (a machine too slow to
    // pause it within its 300 ms run).
    const wroteBeforePause = (await store.highestFencedToken(job)) === frozenStart!.token;
    await sleep(s0 + wakeAfterMs - frozenAt);
    const wokenAt = await redisNow();
    holder.process.kill('SIGCONT');

    // The holder's first fire after SIGCONT names the occurrences that passed while it was frozen.
    const missedWarning = await holder.waitForLine(
      (line) => line.reason === 'missed' && line.first !== undefined,
      5_000,
      'the missed-occurrences warning after SIGCONT',
    );
    const missedFirst = Date.parse(String(missedWarning.first));
    const missedLast = Date.parse(String(missedWarning.last));
    const missedByHolder = (instant: number) => instant >= missedFirst && instant <= missedLast;
    const firstFireAfterWake = missedLast + 1_000;

    // A few occurrences after the wake-up, then wait until both instances have settled every fire up
    // to `until` (a waiting fire settles within lock.wait), so no run of the window is still to come.
    const until = Math.floor(wokenAt / 1000) * 1000 + 3_000;
    const expected: number[] = [];
    for (let instant = from; instant <= until; instant += 1_000) expected.push(instant);
    await waitUntil(
      'both instances to log a fire for every occurrence of the window',
      () =>
        fleet.every((run) => {
          const logged = new Set(fires(run).map(scheduledAtOf));
          return expected.every(
            (instant) => logged.has(instant) || (run === holder && missedByHolder(instant)),
          );
        }),
      { timeoutMs: waitMs + 8_000, intervalMs: 100 },
    );
    await Promise.all(fleet.map((run) => run.process.stop(15_000)));
    // Both kept running through the pause and stop cleanly on SIGTERM.
    for (const run of fleet) expect(await run.process.exited).toEqual({ code: 0, signal: null });

    const inWindow = (await records()).filter(
      (entry) => entry.scheduledAt >= from && entry.scheduledAt <= until,
    );
    const of = (phase: PausedRecord['phase']) => inWindow.filter((entry) => entry.phase === phase);
    expect(expected.length).toBeGreaterThanOrEqual(9);

    // Exactly once: one accepted (fenced) completion per occurrence, none missing, none twice; the
    // runner's own ledger agrees.
    expect(
      of('done')
        .map((entry) => entry.scheduledAt)
        .sort((x, y) => x - y),
    ).toEqual(expected);
    const ledger = new Map(
      (await store.runHistory(job, { limit: 100 })).map((record) => [record.scheduledAt, record]),
    );
    for (const instant of expected) expect(ledger.get(instant)?.outcome).toBe('success');
    // One run per lease: no two starts share a token.
    const starts = of('start');
    expect(new Set(starts.map((entry) => entry.token)).size).toBe(starts.length);

    // The holder skipped (and said so) exactly the occurrences between s0 and the one it woke up in.
    expect(missedWarning).toMatchObject({ level: 40, outcome: 'skipped', reason: 'missed' });
    expect(missedFirst).toBe(s0 + 1_000);
    expect(missedWarning.count).toBe((missedLast - missedFirst) / 1_000 + 1);
    expect(missedLast).toBeGreaterThanOrEqual(Math.floor(wokenAt / 1000) * 1000 - 1_000);
    expect(missedLast).toBeLessThanOrEqual(Math.floor(wokenAt / 1000) * 1000);
    // It ran none of them late: no start, no fire line.
    expect(
      starts.filter((entry) => entry.instance === holder.instance && missedByHolder(entry.scheduledAt)),
    ).toEqual([]);
    expect(fires(holder).filter((line) => missedByHolder(scheduledAtOf(line)))).toEqual([]);
    // The other instance ran every one of them while the holder was frozen.
    const duringPause = expected.filter(missedByHolder);
    expect(duringPause.length).toBeGreaterThanOrEqual(3);
    for (const instant of duringPause) {
      const done = of('done').filter((entry) => entry.scheduledAt === instant);
      expect(done.map((entry) => entry.instance)).toEqual([other.instance]);
    }
    // Both kept firing after the wake-up: one fire line per occurrence each, and a fire that did
    // not run found its occurrence done (it waited out the winner's lease, lock.wait >= ttl).
    for (const run of fleet) {
      const afterWake = fires(run).filter(
        (line) => scheduledAtOf(line) >= firstFireAfterWake && scheduledAtOf(line) <= until,
      );
      expect(afterWake.map(scheduledAtOf).sort((x, y) => x - y)).toEqual(
        expected.filter((instant) => instant >= firstFireAfterWake),
      );
      for (const line of afterWake.filter((entry) => entry.outcome !== 'success'))
        expect(line).toMatchObject({ outcome: 'skipped', reason: 'already-done' });
    }

    // The frozen occurrence itself.
    const s0Starts = starts.filter((entry) => entry.scheduledAt === s0);
    const s0Done = of('done').filter((entry) => entry.scheduledAt === s0);
    const s0Ledger = (await store.runHistory(job, { limit: 20 })).filter((run) => run.scheduledAt === s0);
    if (wroteBeforePause) {
      // Too slow to pause the holder mid-run: it completed s0 and released the lease before the
      // pause, so there was no lease to lose. Everything above still holds.
      console.warn(
        `paused-instance: the holder finished its run before SIGSTOP landed (${Math.round(frozenAt - frozenStart!.at)} ms after its start); the lost-lease checks did not apply`,
      );
      expect(s0Starts.map((entry) => entry.instance)).toEqual([holder.instance]);
      expect(s0Done.map((entry) => entry.instance)).toEqual([holder.instance]);
      expect(of('stale')).toEqual([]);
      expect(of('aborted')).toEqual([]);
      return;
    }
    // Nothing started while the frozen lease lived: it was taken no earlier than s0 (never early),
    // so it lived until s0 + ttl at least, by Redis's clock.
    for (const entry of starts.filter((start) => start.at > frozenAt))
      expect(entry.at).toBeGreaterThanOrEqual(s0 + ttlMs);
    // The other instance took s0 over with a newer token and completed it...
    expect(s0Starts.map((entry) => entry.instance)).toEqual([holder.instance, other.instance]);
    const [frozenRun, takeover] = s0Starts as [PausedRecord, PausedRecord];
    expect(takeover.token).toBeGreaterThan(frozenRun.token);
    expect(s0Done.map((entry) => entry.instance)).toEqual([other.instance]);
    expect(s0Ledger).toEqual([
      expect.objectContaining({ instance: other.instance, outcome: 'success', token: takeover.token }),
    ]);
    // ...and the holder's run went on after SIGCONT, but its write was refused by the fence (the
    // only stale write of the window), as was its ledger record.
    expect(of('stale')).toEqual([
      expect.objectContaining({
        instance: holder.instance,
        scheduledAt: s0,
        token: frozenRun.token,
        code: 'STALE_TOKEN',
      }),
    ]);
    expect(of('stale')[0]!.highest).toBeGreaterThan(frozenRun.token);
    expect(of('stale')[0]!.at).toBeGreaterThanOrEqual(wokenAt);
    // The lost lease aborted the holder's job signal with LockLostError, and no other signal.
    expect(of('aborted')).toEqual([
      expect.objectContaining({ instance: holder.instance, scheduledAt: s0, code: 'LOCK_LOST' }),
    ]);
    expect(
      holder.lines().filter((line) => line.msg === 'lease lost while the job ran: its signal is aborted'),
    ).toEqual([expect.objectContaining({ level: 40, scheduledAt: new Date(s0).toISOString() })]);
    expect(
      other.lines().filter((line) => line.msg === 'lease lost while the job ran: its signal is aborted'),
    ).toEqual([]);
    const s0Fire = fires(holder).filter((line) => scheduledAtOf(line) === s0);
    expect(s0Fire).toEqual([expect.objectContaining({ outcome: 'failure', token: frozenRun.token })]);
    expect(s0Fire[0]!.err).toMatchObject({ code: 'LOCK_LOST' });
  }, 40_000);
});
