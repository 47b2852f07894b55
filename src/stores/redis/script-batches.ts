import { isStoreUnavailableError } from '../../strategies/lock/errors.ts';
import type { BoundedCommands, KeysOf } from './bounded-commands.ts';
import type { StoreScript } from './scripts.ts';

type Argument = string | Buffer | number;

/** How the store sends one script call (with `WAIT` after it when the store waits for replicas). */
export type SendScript = (
  operation: string,
  keys: KeysOf,
  script: StoreScript,
  load: boolean,
  args: readonly Argument[],
  numberOfKeys: number,
) => Promise<unknown>;

/** One call waiting for its turn. */
interface QueuedCall {
  readonly key: string;
  readonly keys: readonly Argument[];
  readonly argv: readonly Argument[];
  /** Redis Cluster slot of its keys, or 0 on a standalone server. */
  readonly slot: number;
  resolve(reply: unknown): void;
  reject(error: unknown): void;
}

/** How many calls a script call carries at most, and how many script calls are sent at once. */
export interface ScriptBatchLimits {
  readonly maxBatch: number;
  readonly maxInFlight: number;
}

/** Defers the first send to the end of the tick, so that calls issued together go out together. */
const resolved = Promise.resolve();

/**
 * Sends the calls of one ledger script (every fire's claim, every run's finish) as few script
 * calls: what is issued in the same tick, or while earlier script calls are in flight, goes out
 * together, up to `maxBatch` calls per script call (its batch form runs each in order, each atomic
 * on its own keys), with at most `maxInFlight` script calls sent at once.
 *
 * The bound on what is in flight is what tells a busy store from a down one: a command is timed
 * from when it is sent, so ten thousand claims queued here wait their turn without timing out,
 * while a sent script call that gets no answer within the command bound means the server is not
 * answering. Then every call still queued fails with that error at once, instead of each timing
 * out in turn behind it; the fires retry them until their deadlines.
 *
 * On Redis Cluster a script call holds the calls of one hash slot only: those of the first queued
 * call's slot among the next `maxBatch` queued.
 */
export class ScriptBatches {
  readonly #operation: string;
  readonly #single: StoreScript;
  readonly #batch: StoreScript;
  readonly #send: SendScript;
  readonly #bounded: BoundedCommands;
  readonly #slotOf: ((key: string) => number) | undefined;
  readonly #limits: ScriptBatchLimits;
  /** Queued calls from `#head` on (a moving head: taking a batch off the front is O(batch)). */
  #queue: QueuedCall[] = [];
  #head = 0;
  #inFlight = 0;
  #pumpScheduled = false;

  constructor(options: {
    operation: string;
    single: StoreScript;
    batch: StoreScript;
    send: SendScript;
    bounded: BoundedCommands;
    slotOf: ((key: string) => number) | undefined;
    limits: ScriptBatchLimits;
  }) {
    this.#operation = options.operation;
    this.#single = options.single;
    this.#batch = options.batch;
    this.#send = options.send;
    this.#bounded = options.bounded;
    this.#slotOf = options.slotOf;
    this.#limits = options.limits;
  }

  /** Queues one call of the script (`keys` and `argv` as the single script takes them); resolves with its reply. */
  run(key: string, keys: readonly Argument[], argv: readonly Argument[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const slot = this.#slotOf ? this.#slotOf(keys[0] as string) : 0;
      this.#queue.push({ key, keys, argv, slot, resolve, reject });
      if (!this.#pumpScheduled && this.#inFlight < this.#limits.maxInFlight) {
        this.#pumpScheduled = true;
        resolved.then(this.#pump);
      }
    });
  }

  readonly #pump = (): void => {
    this.#pumpScheduled = false;
    while (this.#inFlight < this.#limits.maxInFlight && this.#head < this.#queue.length) {
      this.#sendBatch(this.#take());
    }
  };

  /** The next batch off the queue: up to `maxBatch` calls (of one slot on Cluster). */
  #take(): QueuedCall[] {
    const queue = this.#queue;
    const end = Math.min(queue.length, this.#head + this.#limits.maxBatch);
    let batch: QueuedCall[];
    if (this.#slotOf === undefined) {
      batch = queue.slice(this.#head, end);
      this.#head = end;
    } else {
      const slot = queue[this.#head]!.slot;
      batch = [];
      const rest: QueuedCall[] = [];
      for (let index = this.#head; index < end; index++) {
        const call = queue[index]!;
        (call.slot === slot ? batch : rest).push(call);
      }
      // The calls of other slots keep their place at the front, in order.
      this.#head = end - rest.length;
      for (const [offset, call] of rest.entries()) queue[this.#head + offset] = call;
    }
    if (this.#head === queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > queue.length) {
      this.#queue = queue.slice(this.#head);
      this.#head = 0;
    }
    return batch;
  }

  #sendBatch(batch: QueuedCall[]): void {
    this.#inFlight++;
    const lone = batch.length === 1;
    const script = lone ? this.#single : this.#batch;
    let args: Argument[];
    if (lone) {
      args = [...batch[0]!.keys, ...batch[0]!.argv];
    } else {
      // The batch script takes every call's KEYS, then every call's ARGV.
      args = [];
      for (const call of batch) for (const key of call.keys) args.push(key);
      for (const call of batch) for (const value of call.argv) args.push(value);
    }
    const numberOfKeys = this.#single.numberOfKeys * batch.length;
    const keys = lone ? batch[0]!.key : batch.map((call) => call.key);
    this.#bounded.submit(
      this.#operation,
      keys,
      (load) => this.#send(this.#operation, keys, script, load, args, numberOfKeys),
      (reply) => {
        this.#done();
        if (lone) batch[0]!.resolve(reply);
        else for (const [index, call] of batch.entries()) call.resolve((reply as unknown[])[index]);
      },
      (error) => {
        // No answer from a server with little in flight: what is queued behind it would wait as
        // long. It fails now; its callers retry.
        const failing = isStoreUnavailableError(error) ? [...batch, ...this.#drain()] : batch;
        this.#done();
        for (const call of failing) call.reject(error);
      },
    );
  }

  #done(): void {
    this.#inFlight--;
    if (!this.#pumpScheduled && this.#head < this.#queue.length) {
      this.#pumpScheduled = true;
      resolved.then(this.#pump);
    }
  }

  #drain(): QueuedCall[] {
    const drained = this.#queue.slice(this.#head);
    this.#queue = [];
    this.#head = 0;
    return drained;
  }
}
