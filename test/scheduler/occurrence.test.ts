import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { formatOccurrence, JobSchedule, occurrenceOf } from '../../src/scheduler/occurrence.ts';

const at = (iso: string) => Date.parse(iso);

describe('occurrences', () => {
  const everySecond = new JobSchedule({ schedule: '* * * * * *', timezone: 'UTC' });
  const everyFive = new JobSchedule({ schedule: '*/5 * * * * *', timezone: 'UTC' });

  it('maps a fire landing exactly on the instant to that instant', () => {
    expect(everySecond.latestAtOrBefore(at('2026-01-01T00:00:01.000Z'))).toBe(at('2026-01-01T00:00:01.000Z'));
    expect(everyFive.latestAtOrBefore(at('2026-01-01T00:00:05.000Z'))).toBe(at('2026-01-01T00:00:05.000Z'));
  });

  it('maps a fire 1 ms before the instant to the previous one (never to a future instant)', () => {
    expect(everyFive.latestAtOrBefore(at('2026-01-01T00:00:04.999Z'))).toBe(at('2026-01-01T00:00:00.000Z'));
  });

  it('maps a late fire to the latest instant that has passed', () => {
    expect(everyFive.latestAtOrBefore(at('2026-01-01T00:00:07.300Z'))).toBe(at('2026-01-01T00:00:05.000Z'));
    // A fire 1.5 s late on an every-second schedule belongs to the instant that just passed.
    expect(everySecond.latestAtOrBefore(at('2026-01-01T00:00:02.500Z'))).toBe(at('2026-01-01T00:00:02.000Z'));
  });

  it('computes instants in the job timezone', () => {
    const nightly = new JobSchedule({ schedule: '0 2 * * *', timezone: 'Europe/Paris' });
    // 02:00 in Paris in January is 01:00 UTC.
    expect(nightly.latestAtOrBefore(at('2026-01-02T01:30:00.000Z'))).toBe(at('2026-01-02T01:00:00.000Z'));
    expect(nightly.nextAfter(at('2026-01-02T01:00:00.000Z'))).toBe(at('2026-01-03T01:00:00.000Z'));
  });

  it('lists the instants strictly between two instants, bounded', () => {
    expect(everyFive.between(at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:20Z'), 10)).toEqual({
      instants: [at('2026-01-01T00:00:05Z'), at('2026-01-01T00:00:10Z'), at('2026-01-01T00:00:15Z')],
      more: false,
    });
    const capped = everySecond.between(at('2026-01-01T00:00:00Z'), at('2026-01-01T01:00:00Z'), 3);
    expect(capped).toEqual({
      instants: [at('2026-01-01T00:00:01Z'), at('2026-01-01T00:00:02Z'), at('2026-01-01T00:00:03Z')],
      more: true,
    });
  });

  it("on DST days with dst: 'skip': a local time in the gap has no occurrence; a doubled time runs once, an interval on both passes", () => {
    const instants = (schedule: string, from: string, count: number) => {
      const jobSchedule = new JobSchedule({ schedule, timezone: 'Europe/Berlin', dst: 'skip' });
      const found: string[] = [];
      let cursor = at(from);
      for (let i = 0; i < count; i++) {
        cursor = jobSchedule.nextAfter(cursor)!;
        found.push(new Date(cursor).toISOString());
      }
      return found;
    };
    // March 29, 2026: 02:00 CET jumps to 03:00 CEST (01:00 UTC).
    expect(instants('30 2 * * *', '2026-03-28T00:00:00Z', 3)).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-30T00:30:00.000Z', // no 02:30 on the 29th
      '2026-03-31T00:30:00.000Z',
    ]);
    const schedule = new JobSchedule({ schedule: '30 2 * * *', timezone: 'Europe/Berlin', dst: 'skip' });
    // A fire on the 29th belongs to the 28th's occurrence, which it must not run again.
    expect(new Date(schedule.latestAtOrBefore(at('2026-03-29T05:00:00Z'))!).toISOString()).toBe(
      '2026-03-28T01:30:00.000Z',
    );
    expect(instants('*/20 2 * * *', '2026-03-28T01:30:00Z', 2)).toEqual([
      '2026-03-28T01:40:00.000Z',
      '2026-03-30T00:00:00.000Z', // nothing on the 29th
    ]);
    // October 25, 2026: 03:00 CEST falls back to 02:00 CET (01:00 UTC).
    expect(instants('30 2 * * *', '2026-10-24T00:00:00Z', 3)).toEqual([
      '2026-10-24T00:30:00.000Z',
      '2026-10-25T00:30:00.000Z', // the first pass only
      '2026-10-26T01:30:00.000Z',
    ]);
    expect(instants('*/30 2 * * *', '2026-10-24T23:00:00Z', 5)).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:00:00.000Z', // 02:00 again, CET
      '2026-10-25T01:30:00.000Z',
      '2026-10-26T01:00:00.000Z',
    ]);
  });

  it("on DST days with dst: 'shift' (the default): a fixed time in the gap runs at the first instant after it, once", () => {
    const iso = (instants: number[]) => instants.map((instant) => new Date(instant).toISOString());
    const nightly = new JobSchedule({ schedule: '30 2 * * *', timezone: 'Europe/Berlin' });
    expect(nightly.dst).toBe('shift');
    // March 29, 2026: 02:30 does not exist; it runs at 03:00 CEST, 01:00 UTC.
    expect(iso(nightly.between(at('2026-03-28T00:00:00Z'), Number.POSITIVE_INFINITY, 3).instants)).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
    expect(nightly.isShifted(at('2026-03-29T01:00:00Z'))).toBe(true);
    expect(nightly.isShifted(at('2026-03-30T00:30:00Z'))).toBe(false);
    // A late fire on the 29th belongs to the shifted occurrence, which every instance names alike.
    expect(nightly.latestAtOrBefore(at('2026-03-29T05:00:00Z'))).toBe(at('2026-03-29T01:00:00Z'));
    expect(nightly.latestAtOrBefore(at('2026-03-29T00:59:59Z'))).toBe(at('2026-03-28T01:30:00Z'));
    // A list of hours is a fixed time too: 02:00 moves onto 03:00 CEST; 01:00 runs as always.
    const twice = new JobSchedule({ schedule: '0 1,2 * * *', timezone: 'Europe/Berlin' });
    expect(iso(twice.between(at('2026-03-28T23:30:00Z'), at('2026-03-29T12:00:00Z'), 5).instants)).toEqual([
      '2026-03-29T00:00:00.000Z',
      '2026-03-29T01:00:00.000Z',
    ]);
    // ... and on the fall-back night its 02:00 runs once, at the first pass (CEST).
    expect(iso(twice.between(at('2026-10-24T22:30:00Z'), at('2026-10-25T12:00:00Z'), 5).instants)).toEqual([
      '2026-10-24T23:00:00.000Z',
      '2026-10-25T00:00:00.000Z',
    ]);
    // An interval schedule has nothing to shift: no 02:xx on the 29th.
    const halfHourly = new JobSchedule({ schedule: '*/30 2 * * *', timezone: 'Europe/Berlin' });
    expect(halfHourly.nextAfter(at('2026-03-28T01:30:00Z'))).toBe(at('2026-03-30T00:00:00Z'));
  });

  it('answers as a freshly parsed croner pattern, however many schedules take turns (only a few stay parsed)', () => {
    const schedules = Array.from({ length: 40 }, (_, i) => `${(i * 13) % 60} ${(i * 5) % 24} * * ${i % 7}`);
    const shared = schedules.map((schedule) => new JobSchedule({ schedule, timezone: 'Europe/Berlin' }));
    const instantsToAsk = ['2026-03-28T12:00:00Z', '2026-03-29T00:59:59Z', '2026-10-25T00:30:00Z'].map(at);
    for (const instant of instantsToAsk) {
      for (const [i, schedule] of schedules.entries()) {
        const fresh = new Cron(schedule, { timezone: 'Europe/Berlin', paused: true });
        expect(shared[i]!.nextAfter(instant)).toBe(fresh.nextRun(new Date(instant))!.getTime());
        expect(shared[i]!.latestAtOrBefore(instant)).toBe(
          fresh.previousRuns(1, new Date(instant + 1))[0]!.getTime(),
        );
      }
    }
  });

  it('names an occurrence by job and instant', () => {
    const occurrence = occurrenceOf({ name: 'nightly' }, new Date('2026-01-01T02:00:00Z'));
    expect(occurrence).toEqual({ job: 'nightly', scheduledAt: at('2026-01-01T02:00:00Z') });
    expect(occurrenceOf('nightly', at('2026-01-01T02:00:00Z'))).toEqual(occurrence);
    expect(formatOccurrence(occurrence)).toBe('nightly@2026-01-01T02:00:00.000Z');
  });
});
