/** The moving-head queue behind held fires and claim slots (src/scheduler/fifo.ts). */
import { describe, expect, it } from 'vitest';
import { Fifo } from '../../src/scheduler/fifo.ts';

describe('Fifo', () => {
  it('gives items back oldest first, across the cuts of its array, pushes and shifts interleaved', () => {
    const fifo = new Fifo<number>();
    expect(fifo.shift()).toBeUndefined();
    const taken: number[] = [];
    let next = 0;
    // 5,000 rounds of three pushes and two shifts: the head passes 1,024 and the array is cut.
    for (let round = 0; round < 5_000; round++) {
      for (let push = 0; push < 3; push++) fifo.push(next++);
      taken.push(fifo.shift()!, fifo.shift()!);
    }
    expect(fifo.size).toBe(5_000);
    while (fifo.size > 0) taken.push(fifo.shift()!);
    expect(fifo.shift()).toBeUndefined();
    expect(taken).toEqual(Array.from({ length: 15_000 }, (_, index) => index));
    fifo.push(7);
    expect([fifo.size, fifo.shift(), fifo.size]).toEqual([1, 7, 0]);
  });
});
