import { describe, expect, it } from 'vitest';
import { ClaimSlots } from '../../src/scheduler/claim-slots.ts';

describe('ClaimSlots', () => {
  it('takes a free slot at once, without a promise, and hands a given-back slot to the fire waiting longest', async () => {
    const slots = new ClaimSlots(2);
    expect(slots.take()).toBeUndefined();
    expect(slots.take()).toBeUndefined();
    const order: number[] = [];
    const waiting = [1, 2, 3].map((index) => slots.take()!.then(() => order.push(index)));
    slots.give();
    slots.give();
    await Promise.all(waiting.slice(0, 2));
    expect(order).toEqual([1, 2]);
    slots.give();
    await waiting[2];
    expect(order).toEqual([1, 2, 3]);
    // Every slot back: free again, as many as there were.
    slots.give();
    slots.give();
    expect(slots.take()).toBeUndefined();
    expect(slots.take()).toBeUndefined();
    expect(slots.take()).toBeInstanceOf(Promise);
  });

  it('keeps its order past the point where it compacts its queue of waiting fires', async () => {
    const slots = new ClaimSlots(1);
    slots.take();
    const order: number[] = [];
    const waiting = Array.from({ length: 3_000 }, (_, index) => slots.take()!.then(() => order.push(index)));
    for (let index = 0; index < 3_000; index++) slots.give();
    await Promise.all(waiting);
    expect(order).toEqual(Array.from({ length: 3_000 }, (_, index) => index));
  });
});
