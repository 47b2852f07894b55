import { StoreUnavailableError } from 'resil';
import { describe, expect, it } from 'vitest';
import { CallBatches } from '../../src/stores/call-batches.ts';

/** A store round trip the test answers by hand: what each send carried, and its answer. */
function manualSend() {
  const sent: Array<{
    calls: readonly number[];
    answer(replies: number[]): void;
    fail(error: unknown): void;
  }> = [];
  const send = (calls: readonly number[]) =>
    new Promise<readonly number[]>((resolve, reject) => {
      sent.push({ calls, answer: resolve, fail: reject });
    });
  return { sent, send };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
const settled = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('CallBatches', () => {
  it('sends what is issued together in batches of maxBatch, at most maxInFlight at once, answering each call', async () => {
    const { sent, send } = manualSend();
    const batches = new CallBatches({ send, limits: { maxBatch: 3, maxInFlight: 2 } });
    const calls = Array.from({ length: 8 }, (_, index) => batches.run(index));
    await tick();
    expect(sent.map((each) => each.calls)).toEqual([
      [0, 1, 2],
      [3, 4, 5],
    ]);
    sent[1]!.answer([30, 40, 50]);
    await tick();
    expect(sent.map((each) => each.calls).at(-1)).toEqual([6, 7]);
    sent[0]!.answer([0, 10, 20]);
    sent[2]!.answer([60, 70]);
    expect(await Promise.all(calls)).toEqual([0, 10, 20, 30, 40, 50, 60, 70]);
  });

  it('a round trip the store did not answer fails what is queued behind it at once', async () => {
    const { sent, send } = manualSend();
    const batches = new CallBatches({ send, limits: { maxBatch: 2, maxInFlight: 1 } });
    const calls = Array.from({ length: 5 }, (_, index) => settled(batches.run(index)));
    await tick();
    const noAnswer = new StoreUnavailableError('no answer within 2000 ms');
    sent[0]!.fail(noAnswer);
    const results = await Promise.all(calls);
    expect(results).toEqual(calls.map(() => ({ error: noAnswer })));
    expect(sent).toHaveLength(1);
  });

  it("a store's refusal fails only its batch; with retryAlone, each of its calls is sent again on its own", async () => {
    const refusal = new StoreUnavailableError('invalid byte sequence', { cause: new Error('22021') });
    for (const retryAlone of [false, true]) {
      const { sent, send } = manualSend();
      const batches = new CallBatches({ send, limits: { maxBatch: 2, maxInFlight: 1 }, retryAlone });
      const calls = Array.from({ length: 3 }, (_, index) => settled(batches.run(index)));
      await tick();
      sent[0]!.fail(refusal);
      await tick();
      if (!retryAlone) {
        expect(sent.map((each) => each.calls)).toEqual([[0, 1], [2]]);
        sent[1]!.answer([20]);
        expect(await Promise.all(calls)).toEqual([{ error: refusal }, { error: refusal }, { value: 20 }]);
        continue;
      }
      sent[1]!.fail(refusal); // call 0 alone: it is the bad one
      await tick();
      sent[2]!.answer([10]); // call 1 alone
      await tick();
      sent[3]!.answer([20]);
      expect(sent.map((each) => each.calls)).toEqual([[0, 1], [0], [1], [2]]);
      expect(await Promise.all(calls)).toEqual([{ error: refusal }, { value: 10 }, { value: 20 }]);
    }
  });
});
