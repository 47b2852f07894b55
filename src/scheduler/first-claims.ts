import { fnv1a } from './occurrence.ts';

/**
 * Of the live instances (`instances`, by name), the one that claims `job` first when many of an
 * instance's fires are due together: each pair of an instance and the job gets a score, and the
 * highest wins (rendezvous hashing; a tie goes to the name first in order). Every instance
 * computes the same answer from the same list, so the fleet splits a burst into shares that do
 * not overlap, and an instance joining or leaving moves only the jobs it wins or won.
 *
 * @example
 * firstClaimer('nightly-report', ['web-1', 'web-2', 'web-3']); // one of the three, the same everywhere
 */
export function firstClaimer(job: string, instances: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const instance of instances) {
    const score = mix(fnv1a(`${instance}\n${job}`));
    if (score > bestScore || (score === bestScore && best !== undefined && instance < best)) {
      best = instance;
      bestScore = score;
    }
  }
  return best;
}

/** MurmurHash3's 32-bit finaliser: names that differ in one character score far apart. */
function mix(hash: number): number {
  let mixed = hash;
  mixed ^= mixed >>> 16;
  mixed = Math.imul(mixed, 0x85ebca6b);
  mixed ^= mixed >>> 13;
  mixed = Math.imul(mixed, 0xc2b2ae35);
  mixed ^= mixed >>> 16;
  return mixed >>> 0;
}
