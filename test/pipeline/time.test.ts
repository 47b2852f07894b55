import { describe, expect, it } from 'vitest';
import { withDeadline } from '../../src/pipeline/time.ts';
import { FakeTimeProvider } from '../../src/testing/fake-time-provider.ts';

describe('withDeadline', () => {
  it('settles as the work does within the deadline, and clears its timer', async () => {
    const time = new FakeTimeProvider();
    await expect(withDeadline(Promise.resolve(42), 1_000, () => 'late', time)).resolves.toBe(42);
    await expect(
      withDeadline(Promise.reject(new Error('refused')), 1_000, () => 'late', time),
    ).rejects.toThrow('refused');
    expect(time.pendingTimers).toBe(0);
  });

  it('after the deadline: what onDeadline returns or throws; a late answer or rejection is dropped', async () => {
    const time = new FakeTimeProvider();
    let answer!: (value: number) => void;
    const returned = withDeadline(
      new Promise<number>((resolve) => (answer = resolve)),
      500,
      () => 'late',
      time,
    );
    let fail!: (error: Error) => void;
    const thrown = withDeadline(
      new Promise<number>((_, reject) => (fail = reject)),
      500,
      () => {
        throw new Error('no answer within 500 ms');
      },
      time,
    ).catch((error: unknown) => error);
    await time.advance(499);
    expect(time.pendingTimers).toBe(2);
    await time.advance(1);
    await expect(returned).resolves.toBe('late');
    expect(await thrown).toEqual(new Error('no answer within 500 ms'));
    answer(42);
    fail(new Error('late'));
    await expect(returned).resolves.toBe('late');
  });
});
