/**
 * Three `resil run` processes on one Redis, as a fleet runs them. The job writes its own ledger
 * (a Redis list of { phase, scheduledAt, at: Redis TIME, instance, token }), and the assertions are
 * exact counts over it.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureBuilt,
  type JobRecord,
  libfaketimeAvailable,
  type RunFixture,
  type RunProcess,
  startRun,
  writeRunFixture,
} from '../cli/run-process.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';
import { skipOrFail } from '../support/services.ts';

const redisUrl = await redisUrlForTests();
const faketime = libfaketimeAvailable();
// Says why it skips, like the Redis and PostgreSQL helpers; RESIL_REQUIRE_SERVICES=1 makes it a failure.
if (!faketime) skipOrFail('Fleet tests skipped: libfaketime is missing (apt-get install -y faketime).');

describe.skipIf(!redisUrl || !faketime)('a fleet of resil run processes on one Redis', () => {
  let client: Redis;
  const fixtures: RunFixture[] = [];
  const processes: RunProcess[] = [];

  beforeAll(() => {
    ensureBuilt();
    client = new Redis(redisUrl!);
  }, 200_000);
  afterAll(async () => {
    await Promise.all(processes.map((run) => run.process.stop()));
    for (const fixture of fixtures) {
      await deleteKeys(client, fixture.prefix);
      fixture.remove();
    }
    await client.quit();
  });

  const redisNow = async () => {
    const [seconds, micros] = await client.time();
    return Number(seconds) * 1000 + Number(micros) / 1000;
  };
  const records = async (key: string) =>
    (await client.lrange(key, 0, -1)).map((entry) => JSON.parse(entry) as JobRecord);
  const start = (fixture: RunFixture, instance: string, clockOffset?: string) => {
    const run = startRun(fixture, { instance, redisUrl: redisUrl!, clockOffset });
    processes.push(run);
    return run;
  };
  const started = (run: RunProcess) =>
    run.waitForLine((line) => String(line.msg).startsWith('runner started'), 15_000, 'the runner start');

  it('every occurrence completes exactly once and none starts before its instant, with one instance 2 s ahead', async () => {
    const fixture = writeRunFixture({
      prefix: uniquePrefix('fleet-skew'),
      jobs: [{ name: 'tick', schedule: '* * * * * *', workMs: 150 }],
    });
    fixtures.push(fixture);
    const fleet = [start(fixture, 'a'), start(fixture, 'b'), start(fixture, 'fast', '+2s')];
    await Promise.all(fleet.map(started));
    // From 3 s on: the fast instance started with its clock 2 s on, so it never fires what passed before.
    const from = Math.ceil((await redisNow()) / 1000) * 1000 + 3_000;
    await new Promise((resolve) => setTimeout(resolve, 13_000));
    const until = Math.floor((await redisNow()) / 1000) * 1000 - 1_000;
    await Promise.all(fleet.map((run) => run.process.stop(15_000)));
    for (const run of fleet) expect(await run.process.exited).toEqual({ code: 0, signal: null });

    const all = await records(fixture.recordKey);
    const inWindow = all.filter((entry) => entry.scheduledAt >= from && entry.scheduledAt <= until);
    const expected: number[] = [];
    for (let instant = from; instant <= until; instant += 1_000) expected.push(instant);
    expect(expected.length).toBeGreaterThanOrEqual(8);

    const starts = inWindow.filter((entry) => entry.phase === 'start');
    const ends = inWindow.filter((entry) => entry.phase === 'end');
    // Exactly once: one start and one completion per occurrence, none missing.
    expect(starts.map((entry) => entry.scheduledAt).sort()).toEqual(expected);
    expect(ends.map((entry) => entry.scheduledAt).sort()).toEqual(expected);
    // Never early, by the store's clock: across every record, the job saw Redis TIME >= scheduledAt.
    const early = all.filter((entry) => entry.phase === 'start' && entry.at < entry.scheduledAt);
    expect(early).toEqual([]);
    // Each run holds a fresh token, increasing with the occurrences.
    const tokens = starts.sort((x, y) => x.scheduledAt - y.scheduledAt).map((entry) => entry.token);
    expect([...tokens].sort((x, y) => x - y)).toEqual(tokens);
    expect(new Set(tokens).size).toBe(tokens.length);

    // The fast instance really ran 2 s ahead, and said so.
    const [fast] = fleet.slice(2);
    const warning = fast!.lines().find((line) => line.thresholdMs !== undefined);
    expect(warning).toMatchObject({ level: 40 });
    expect(warning!.offsetMs as number).toBeLessThan(-1_500);
    expect(warning!.offsetMs as number).toBeGreaterThan(-2_500);
    // Every instance logged one line per fire it handled in the window, each with a reason when skipped.
    for (const run of fleet) {
      const fires = run
        .lines()
        .filter(
          (line) =>
            typeof line.outcome === 'string' &&
            Date.parse(String(line.scheduledAt)) >= from &&
            Date.parse(String(line.scheduledAt)) <= until,
        );
      expect(fires.length).toBe(expected.length);
      for (const line of fires.filter((entry) => entry.outcome === 'skipped')) {
        expect(['overlap', 'already-done']).toContain(line.reason);
      }
    }
  }, 40_000);

  it('when the winner is killed mid-run, a waiting instance (wait >= ttl) takes the occurrence over', async () => {
    const fixture = writeRunFixture({
      prefix: uniquePrefix('fleet-kill'),
      jobs: [
        { name: 'report', schedule: '*/10 * * * * *', workMs: 2_500, lock: { ttl: 1_500, wait: 10_000 } },
      ],
    });
    fixtures.push(fixture);
    const fleet = [start(fixture, 'a'), start(fixture, 'b'), start(fixture, 'c')];
    await Promise.all(fleet.map(started));

    // The first run of the first occurrence: kill its instance while it works.
    let first: JobRecord | undefined;
    const deadline = performance.now() + 15_000;
    while (first === undefined && performance.now() < deadline) {
      first = (await records(fixture.recordKey)).find((entry) => entry.phase === 'start');
      if (first === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(first).toBeDefined();
    const winner = fleet.find((run) => run.instance === first!.instance)!;
    await new Promise((resolve) => setTimeout(resolve, 300));
    winner.process.kill('SIGKILL');
    await winner.process.exited;
    const killedAt = await redisNow();

    const others = fleet.filter((run) => run !== winner);
    const takenOver = await Promise.race(
      others.map((run) =>
        run.waitForLine(
          (line) => line.outcome === 'success' && Date.parse(String(line.scheduledAt)) === first!.scheduledAt,
          12_000,
          'the takeover run',
        ),
      ),
    );
    // The third instance waited too, then found the occurrence done.
    const third = others.find((run) => run.instance !== takenOver.instance)!;
    await third.waitForLine(
      (line) => line.reason === 'already-done' && Date.parse(String(line.scheduledAt)) === first!.scheduledAt,
      12_000,
      'already-done on the third instance',
    );
    await Promise.all(others.map((run) => run.process.stop(15_000)));

    const occurrence = (await records(fixture.recordKey)).filter(
      (entry) => entry.scheduledAt === first!.scheduledAt,
    );
    const starts = occurrence.filter((entry) => entry.phase === 'start');
    const ends = occurrence.filter((entry) => entry.phase === 'end');
    expect(starts.map((entry) => entry.instance)).toEqual([winner.instance, takenOver.instance]);
    expect(ends.map((entry) => entry.instance)).toEqual([takenOver.instance]);
    // Never two at a time: the takeover started only after the winner died, with a higher token.
    expect(starts[1]!.at).toBeGreaterThanOrEqual(killedAt);
    expect(starts[1]!.token).toBeGreaterThan(starts[0]!.token);
  }, 45_000);
});
