/**
 * The ambient context lives in one slot on globalThis that every copy of resil in the process
 * shares. Copies built before the slot gained `run`/`get` know only its AsyncLocalStorage
 * (`storage`): whichever copy loads first, both must use the same one, so a token set under one
 * copy's lock is read by the other's getLockToken(). Each case runs in a fresh process, with an
 * older copy played by code that uses the slot the way those copies did.
 */
import { describe, expect, it } from 'vitest';
import { runModule } from '../support/processes.ts';

/** Runs `body` in a fresh process and returns what it printed, as JSON. */
async function runChild(body: string): Promise<unknown> {
  const { code, stdout, stderr } = await runModule(body);
  if (code !== 0) throw new Error(`child exited ${code}: ${stderr || stdout}`);
  return JSON.parse(stdout);
}

const lockedRun = `
  const { ResiliencePipelineBuilder, MemoryLockStore, getLockToken, LOCK_TOKEN } = await import('./src/index.ts');
  const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'slot', store: new MemoryLockStore() }).build();
  const seenByOlder = await pipeline.execute(async () => {
    await Promise.resolve();
    return slot().storage.getStore()?.properties.get(LOCK_TOKEN);
  });
  // The older copy's pipeline entering its context: storage.run(context, callback, context).
  const context = { properties: { get: (key) => (key === LOCK_TOKEN ? 7 : undefined) } };
  const seenByNewer = await slot().storage.run(context, async () => {
    await Promise.resolve();
    return getLockToken();
  }, context);
  console.log(JSON.stringify({ seenByOlder, seenByNewer }));
`;

describe('an older copy of resil in the same process', () => {
  it('loaded first: this copy keeps its AsyncLocalStorage', async () => {
    const seen = await runChild(`
      const { AsyncLocalStorage } = await import('node:async_hooks');
      const key = Symbol.for('resil.ambientContext');
      globalThis[key] ??= { storage: new AsyncLocalStorage() };
      const planted = globalThis[key].storage;
      const slot = () => globalThis[key];
      ${lockedRun}
      if (slot().storage !== planted) throw new Error('the older copy\\'s storage was replaced');
    `);
    expect(seen).toEqual({ seenByOlder: 1, seenByNewer: 7 });
  });

  it("loaded after this copy: it finds this copy's AsyncLocalStorage in the slot", async () => {
    const seen = await runChild(`
      const key = Symbol.for('resil.ambientContext');
      await import('./src/index.ts');
      // An older copy read the slot's storage once, when it loaded.
      const storage = globalThis[key].storage;
      if (typeof storage?.run !== 'function') throw new Error('no AsyncLocalStorage in the slot');
      const slot = () => ({ storage });
      ${lockedRun}
    `);
    expect(seen).toEqual({ seenByOlder: 1, seenByNewer: 7 });
  });
});
