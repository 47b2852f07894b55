/**
 * On Node 20, the first AsyncLocalStorage.run() turns on promise hooks for the whole process, and
 * from then on every `await` in the host application costs about 3x. A pipeline without a lock
 * must leave the host's `await` at its floor: measured in fresh processes, against one that never
 * imported resil.
 */
import { describe, expect, it } from 'vitest';
import { runModule } from '../support/processes.ts';

type Mode = 'never-imported' | 'retry-timeout' | 'lock';

/**
 * A child that (depending on `mode`) imports resil from src and runs 1,000 executions, then prints
 * the best ns per bare `await` over 15 rounds. Best-of, because a loaded machine only ever adds time.
 */
const childSource = (mode: Mode) => `
  const work = async () => 42;
  if (${JSON.stringify(mode)} !== 'never-imported') {
    const { ResiliencePipelineBuilder } = await import('./src/index.ts');
    const builder = new ResiliencePipelineBuilder().addRetry({ maxRetryAttempts: 3, delay: 1 }).addTimeout('30s');
    const pipeline = (${JSON.stringify(mode)} === 'lock' ? builder.addLock({ key: () => 'cost' }) : builder).build();
    for (let i = 0; i < 1000; i++) await pipeline.execute(work);
    await pipeline.settle(async () => { throw new Error('a failed attempt too'); });
  }
  let best = Infinity;
  for (let round = 0; round < 15; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < 200_000; i++) await work();
    best = Math.min(best, Number(process.hrtime.bigint() - started) / 200_000);
  }
  console.log(best);
`;

async function awaitCost(mode: Mode): Promise<number> {
  // tsx in every child, the baseline too: only the import of resil differs.
  const { code, stdout, stderr } = await runModule(childSource(mode));
  const ns = Number(stdout.trim());
  if (code !== 0 || !(ns > 0)) throw new Error(`child (${mode}) exited ${code}: ${stderr || stdout}`);
  return ns;
}

/** Best ns per bare `await` of each mode over `runs` interleaved fresh processes, one at a time. */
async function measure(modes: readonly Mode[], runs: number): Promise<Record<Mode, number>> {
  const best: Partial<Record<Mode, number>> = {};
  for (let run = 0; run < runs; run++) {
    for (const mode of modes) best[mode] = Math.min(best[mode] ?? Infinity, await awaitCost(mode));
  }
  return best as Record<Mode, number>;
}

describe('the host process after executions', () => {
  it("a retry + timeout pipeline leaves a bare await at the floor of a process that never imported resil (< 1.5x), while a lock's ambient context does not (control)", async () => {
    const costs = await measure(['never-imported', 'retry-timeout', 'lock'], 3);
    const ratio = (mode: Mode) => costs[mode] / costs['never-imported'];
    console.log(
      `bare await: never imported ${costs['never-imported'].toFixed(1)} ns, after retry + timeout ` +
        `${costs['retry-timeout'].toFixed(1)} ns (${ratio('retry-timeout').toFixed(2)}x), after a lock ` +
        `${costs.lock.toFixed(1)} ns (${ratio('lock').toFixed(2)}x)`,
    );
    expect(ratio('retry-timeout')).toBeLessThan(1.5);
    // The control proves the measurement sees promise hooks: a lock enters the ambient context.
    expect(ratio('lock')).toBeGreaterThan(1.5);
  }, 120_000);
});
