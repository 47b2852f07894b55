import { describe, expect, it } from 'vitest';
import { firstClaimer } from '../../src/scheduler/first-claims.ts';

const jobs = Array.from({ length: 10_000 }, (_, i) => `tenant-${i}`);

describe('firstClaimer', () => {
  it('names the same instance whatever the order of the list', () => {
    for (const job of jobs.slice(0, 200)) {
      expect(firstClaimer(job, ['web-1', 'web-2', 'web-3'])).toBe(
        firstClaimer(job, ['web-3', 'web-1', 'web-2']),
      );
    }
  });

  it('splits jobs about evenly between instances whose names differ in one character', () => {
    const instances = ['web-1', 'web-2', 'web-3'];
    const counts = new Map(instances.map((instance) => [instance, 0]));
    for (const job of jobs) {
      const claimer = firstClaimer(job, instances)!;
      counts.set(claimer, counts.get(claimer)! + 1);
    }
    for (const count of counts.values()) expect(count / jobs.length).toBeGreaterThan(0.3);
  });

  it('moves only the jobs of an instance that leaves, and gives a joining one only jobs it wins', () => {
    const before = ['web-1', 'web-2', 'web-3'];
    const after = ['web-1', 'web-3', 'web-4'];
    let moved = 0;
    for (const job of jobs) {
      const was = firstClaimer(job, before);
      const is = firstClaimer(job, after);
      if (was !== 'web-2' && is !== 'web-4') expect(is).toBe(was);
      if (was !== is) moved++;
    }
    // web-2's third and web-4's quarter, about half in all: not a reshuffle.
    expect(moved / jobs.length).toBeLessThan(0.6);
  });

  it('is the one instance, or none', () => {
    expect(firstClaimer('nightly', ['only'])).toBe('only');
    expect(firstClaimer('nightly', [])).toBeUndefined();
  });
});
