import { describe, expect, it } from 'vitest';
import { readJobDetail } from '../../src/cli/dashboard/api.ts';
import { MemoryLockStore } from '../../src/ledger/memory-store.ts';
import { resolveConfigSync } from '../../src/scheduler/resolve.ts';

/** A job page's next runs, read while the store's clock says `now`. */
async function nextRunsAt(now: string, dst: 'shift' | 'skip') {
  const store = Object.assign(new MemoryLockStore(), { now: async () => Date.parse(now) });
  const config = resolveConfigSync(
    {
      store,
      jobs: [{ name: 'nightly', schedule: '30 2 * * *', timezone: 'Europe/Berlin', dst, run: () => {} }],
    },
    'resil.config.ts',
  );
  const detail = await readJobDetail(config, config.jobs[0]!, { actions: false, limit: 1 });
  return { nextRuns: detail.nextRuns.slice(0, 2), shiftedRuns: detail.shiftedRuns };
}

describe('a job page on the 2027 spring-forward day in Europe/Berlin', () => {
  it("lists 02:30 at 03:00 CEST and marks it shifted with dst: 'shift', as jobs next does", async () => {
    expect(await nextRunsAt('2027-03-27T12:00:00Z', 'shift')).toEqual({
      nextRuns: ['2027-03-28T01:00:00.000Z', '2027-03-29T00:30:00.000Z'],
      shiftedRuns: ['2027-03-28T01:00:00.000Z'],
    });
  });

  it("lists no run that day with dst: 'skip'", async () => {
    expect(await nextRunsAt('2027-03-27T12:00:00Z', 'skip')).toEqual({
      nextRuns: ['2027-03-29T00:30:00.000Z', '2027-03-30T00:30:00.000Z'],
      shiftedRuns: [],
    });
  });
});
