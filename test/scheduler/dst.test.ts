import { describe, expect, it } from 'vitest';
import { ConfigError, formatConfigProblem } from '../../src/scheduler/config-error.ts';
import { dstNoticesOf, isFixedTime, zoneTransitions } from '../../src/scheduler/dst.ts';
import { createScheduler } from '../../src/scheduler/scheduler.ts';
import { FakeTimeProvider } from '../../src/testing/index.ts';

const run = async () => {};

/** `createScheduler().nextRuns(name, count)` with the scheduler's clock pinned at `now`, as ISO strings. */
function nextRunsAt(now: string, job: Record<string, unknown>, count: number): string[] {
  const scheduler = createScheduler({
    timeProvider: new FakeTimeProvider(Date.parse(now)),
    jobs: [{ name: 'job', run, ...job } as never],
  });
  return scheduler.nextRuns('job', count).map((instant) => instant.toISOString());
}

describe("dst: 'shift' | 'skip'", () => {
  it("refuses any other value, naming the allowed ones (and the likely one); 'shift' when absent", () => {
    let error: unknown;
    try {
      createScheduler({
        jobs: [
          { name: 'a', schedule: '30 2 * * *', run, dst: 'later' as never },
          { name: 'b', schedule: '30 2 * * *', run, dst: 'skp' as never },
          { name: 'c', schedule: '30 2 * * *', run, dst: true as never },
        ],
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map(formatConfigProblem)).toEqual([
      `createScheduler() options: job "a": option "dst": expected one of 'shift', 'skip', got "later"`,
      `createScheduler() options: job "b": option "dst": expected one of 'shift', 'skip' (did you mean 'skip'?), got "skp"`,
      `createScheduler() options: job "c": option "dst": expected one of 'shift', 'skip', got true`,
    ]);
  });

  // 2027: Europe/Berlin springs forward on March 28 (02:00 CET -> 03:00 CEST, 01:00 UTC) and falls
  // back on October 31 (03:00 CEST -> 02:00 CET, 01:00 UTC); America/New_York on March 14 (02:00 EST
  // -> 03:00 EDT, 07:00 UTC) and November 7 (02:00 EDT -> 01:00 EST, 06:00 UTC).
  const cases = [
    {
      day: 'Berlin, spring forward',
      now: '2027-03-27T12:00:00Z',
      timezone: 'Europe/Berlin',
      schedule: '30 2 * * *',
      shift: ['2027-03-28T01:00:00.000Z', '2027-03-29T00:30:00.000Z'],
      skip: ['2027-03-29T00:30:00.000Z', '2027-03-30T00:30:00.000Z'],
    },
    {
      day: 'Berlin, fall back',
      now: '2027-10-30T12:00:00Z',
      timezone: 'Europe/Berlin',
      schedule: '30 2 * * *',
      shift: ['2027-10-31T00:30:00.000Z', '2027-11-01T01:30:00.000Z'],
      skip: ['2027-10-31T00:30:00.000Z', '2027-11-01T01:30:00.000Z'],
    },
    {
      day: 'New York, spring forward',
      now: '2027-03-13T12:00:00Z',
      timezone: 'America/New_York',
      schedule: '30 2 * * *',
      shift: ['2027-03-14T07:00:00.000Z', '2027-03-15T06:30:00.000Z'],
      skip: ['2027-03-15T06:30:00.000Z', '2027-03-16T06:30:00.000Z'],
    },
    {
      day: 'New York, fall back',
      now: '2027-11-06T12:00:00Z',
      timezone: 'America/New_York',
      schedule: '30 1 * * *',
      shift: ['2027-11-07T05:30:00.000Z', '2027-11-08T06:30:00.000Z'],
      skip: ['2027-11-07T05:30:00.000Z', '2027-11-08T06:30:00.000Z'],
    },
  ];
  it.each(cases)(
    'nextRuns on the 2027 $day day, both policies',
    ({ now, timezone, schedule, shift, skip }) => {
      expect(nextRunsAt(now, { schedule, timezone }, 2)).toEqual(shift);
      expect(nextRunsAt(now, { schedule, timezone, dst: 'shift' }, 2)).toEqual(shift);
      expect(nextRunsAt(now, { schedule, timezone, dst: 'skip' }, 2)).toEqual(skip);
    },
  );

  it('an interval schedule runs once per real instant, whatever the policy', () => {
    for (const dst of ['shift', 'skip']) {
      const hourly = { schedule: '0 * * * *', timezone: 'Europe/Berlin', dst };
      expect(nextRunsAt('2027-03-27T23:30:00Z', hourly, 3)).toEqual([
        '2027-03-28T00:00:00.000Z', // 01:00 CET
        '2027-03-28T01:00:00.000Z', // 03:00 CEST: no 02:00 that day
        '2027-03-28T02:00:00.000Z',
      ]);
      expect(nextRunsAt('2027-10-30T23:30:00Z', hourly, 3)).toEqual([
        '2027-10-31T00:00:00.000Z', // 02:00 CEST
        '2027-10-31T01:00:00.000Z', // 02:00 CET, again
        '2027-10-31T02:00:00.000Z',
      ]);
      const quarterly = { schedule: '*/15 * * * *', timezone: 'America/New_York', dst };
      expect(nextRunsAt('2027-03-14T06:50:00Z', quarterly, 2)).toEqual([
        '2027-03-14T07:00:00.000Z', // 03:00 EDT right after 01:45 EST
        '2027-03-14T07:15:00.000Z',
      ]);
    }
  });
});

describe('which schedules name a fixed local time', () => {
  it('no * and no step in the second, minute and hour fields', () => {
    for (const fixed of ['30 2 * * *', '0 2,14 * * *', '0 1-3 * * 1', '15 30 2 * * *', '@daily']) {
      expect(isFixedTime(fixed), fixed).toBe(true);
    }
    for (const interval of ['0 * * * *', '*/15 * * * *', '*/20 2 * * *', '* 30 2 * * *', '0 */2 * * *']) {
      expect(isFixedTime(interval), interval).toBe(false);
    }
  });
});

describe('DST transitions', () => {
  const year = [Date.parse('2027-01-01T00:00:00Z'), Date.parse('2028-01-01T00:00:00Z')] as const;

  it("finds a zone's offset changes to the second; none in UTC", () => {
    expect(zoneTransitions('Europe/Berlin', ...year)).toEqual([
      { at: Date.parse('2027-03-28T01:00:00Z'), offsetBeforeMs: 3_600_000, offsetAfterMs: 7_200_000 },
      { at: Date.parse('2027-10-31T01:00:00Z'), offsetBeforeMs: 7_200_000, offsetAfterMs: 3_600_000 },
    ]);
    expect(zoneTransitions('America/New_York', ...year).map((t) => new Date(t.at).toISOString())).toEqual([
      '2027-03-14T07:00:00.000Z',
      '2027-11-07T06:00:00.000Z',
    ]);
    // From any instant, not only a whole second.
    expect(zoneTransitions('America/New_York', year[0] + 272, year[1])[0]!.at).toBe(
      Date.parse('2027-03-14T07:00:00Z'),
    );
    expect(zoneTransitions('UTC', ...year)).toEqual([]);
    expect(zoneTransitions('Asia/Tokyo', ...year)).toEqual([]);
  });

  it('tells which fixed local times a transition skips or repeats, and when the job runs for them', () => {
    const newYork = (schedule: string, dst: 'shift' | 'skip') =>
      dstNoticesOf({ schedule, timezone: 'America/New_York', dst }, ...year);
    expect(newYork('30 2 * * *', 'shift')).toEqual([
      { kind: 'gap', date: '2027-03-14', localTimes: ['02:30'], runsAt: Date.parse('2027-03-14T07:00:00Z') },
    ]);
    expect(newYork('30 2 * * *', 'skip')).toEqual([
      { kind: 'gap', date: '2027-03-14', localTimes: ['02:30'], runsAt: undefined },
    ]);
    expect(newYork('0,30 1 * * *', 'skip')).toEqual([
      {
        kind: 'fold',
        date: '2027-11-07',
        localTimes: ['01:00', '01:30'],
        runsAt: Date.parse('2027-11-07T05:00:00Z'),
      },
    ]);
    expect(newYork('0 3 * * *', 'shift')).toEqual([]);
    expect(newYork('*/30 * * * *', 'shift')).toEqual([]);
  });
});
