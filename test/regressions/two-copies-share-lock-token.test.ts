/**
 * A config compiled or bundled on its own loads a second copy of resil next to the CLI's. The
 * lock token set by one copy's pipeline must still be readable through the other copy's
 * getLockToken() and LOCK_TOKEN.
 */
import { existsSync } from 'node:fs';
import { getLockToken, LOCK_TOKEN, MemoryLockStore, ResiliencePipelineBuilder } from 'resil';
import { describe, expect, it } from 'vitest';

const built = new URL('../../dist/index.js', import.meta.url);

describe.skipIf(!existsSync(built))('two copies of resil in one process', () => {
  it('getLockToken() and LOCK_TOKEN of the other copy see the token', async () => {
    const other = (await import(built.href)) as typeof import('resil');
    expect(other.getLockToken).not.toBe(getLockToken);

    const pipeline = new ResiliencePipelineBuilder()
      .addLock({ key: () => 'two-copies', store: new MemoryLockStore() })
      .build();
    const seen = await pipeline.execute(async (context) => {
      await Promise.resolve();
      return {
        own: getLockToken(),
        other: other.getLockToken(),
        otherKey: context.properties.get(other.LOCK_TOKEN),
        sameKey: other.LOCK_TOKEN === LOCK_TOKEN,
      };
    });
    expect(seen.own).toBe(1);
    expect(seen).toEqual({ own: 1, other: 1, otherKey: 1, sameKey: true });
  });
});
