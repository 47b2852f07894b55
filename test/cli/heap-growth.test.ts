/**
 * `resil run` bounds how far V8 grows the heap past what it last kept (heap-growth.ts), unless node
 * was started with a growth of its own.
 */
import { describe, expect, it } from 'vitest';
import { heapGrowthFlag, runnerHeapGrowingPercent } from '../../src/cli/heap-growth.ts';

describe('the heap growth resil run sets', () => {
  it('is 50 % unless node was given one, in either spelling', () => {
    expect(runnerHeapGrowingPercent).toBe(50);
    expect(heapGrowthFlag([])).toBe('--heap-growing-percent=50');
    expect(heapGrowthFlag(['--enable-source-maps', '--heap-prof'])).toBe('--heap-growing-percent=50');
    expect(heapGrowthFlag(['--heap-growing-percent=20'])).toBeUndefined();
    expect(heapGrowthFlag(['--heap_growing_percent=80'])).toBeUndefined();
    // Another flag that starts alike is not it.
    expect(heapGrowthFlag(['--heap-growing-percentage=20'])).toBe('--heap-growing-percent=50');
  });
});
