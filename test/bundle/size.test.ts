import { describe, expect, it } from 'vitest';
import {
  type BundleEntry,
  type BundleSize,
  formatBytes,
  measure,
  resilEntries,
} from '../../scripts/bundle-size.ts';

/**
 * Gzipped budgets, in bytes. Each sits a little above the size measured when it was set (2.69,
 * 3.68 and 11.03 kB), so a change that grows a bundle noticeably fails here and has to raise the
 * budget on purpose. The aim for PipelineBuilder + retry is 2 kB (cockatiel's retry: 1.59 kB
 * measured the same way); most of what remains is option validation with its messages, the
 * duration parser, the ambient context and Polly's backoff formulas.
 */
const budgets = {
  retry: 2_850,
  retryTimeout: 3_900,
  full: 11_700,
} satisfies Record<keyof typeof resilEntries, number>;

const lockOrStore = /\/strategies\/lock\/|\/stores\//;
const lockSymbols = [
  'LOCK_NOT_ACQUIRED',
  'LOCK_LOST',
  'MemoryLockStore',
  'LockNotAcquiredError',
  'STALE_TOKEN',
];
// A static or dynamic import of a Node built-in. `process.getBuiltinModule('node:async_hooks')`
// (the ambient context) is a runtime probe that browsers skip, not an import.
const nodeImport = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s*)["']node:/;

const sizes = new Map<string, BundleSize>();
async function sizeOf(entry: BundleEntry): Promise<BundleSize> {
  let size = sizes.get(entry.name);
  if (!size) {
    size = await measure(entry);
    sizes.set(entry.name, size);
    console.log(
      `${entry.name}: ${formatBytes(size.minifiedBytes)} minified, ${formatBytes(size.gzippedBytes)} gzipped`,
    );
  }
  return size;
}

describe('browser bundle', () => {
  for (const [key, entry] of Object.entries(resilEntries) as Array<
    [keyof typeof resilEntries, BundleEntry]
  >) {
    it(`${entry.name}: bundles for the browser under ${formatBytes(budgets[key])} gzipped`, async () => {
      const size = await sizeOf(entry);
      expect(size.code).not.toMatch(nodeImport);
      expect(size.gzippedBytes).toBeLessThanOrEqual(budgets[key]);
    });
  }

  for (const key of ['retry', 'retryTimeout'] as const) {
    it(`${resilEntries[key].name}: pulls in no lock, store or other strategy code`, async () => {
      const size = await sizeOf(resilEntries[key]);
      expect(size.inputs.filter((path) => lockOrStore.test(path))).toEqual([]);
      for (const symbol of lockSymbols) expect(size.code).not.toContain(symbol);
      const strategies = new Set(
        size.inputs.map((path) => /src\/strategies\/([^/]+)\//.exec(path)?.[1]).filter(Boolean),
      );
      expect([...strategies].sort()).toEqual(key === 'retry' ? ['retry'] : ['retry', 'timeout']);
    });
  }
});
