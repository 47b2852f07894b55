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

  it('names an occurrence by job and instant', () => {
    const occurrence = occurrenceOf({ name: 'nightly' }, new Date('2026-01-01T02:00:00Z'));
    expect(occurrence).toEqual({ job: 'nightly', scheduledAt: at('2026-01-01T02:00:00Z') });
    expect(occurrenceOf('nightly', at('2026-01-01T02:00:00Z'))).toEqual(occurrence);
    expect(formatOccurrence(occurrence)).toBe('nightly@2026-01-01T02:00:00.000Z');
  });
});
