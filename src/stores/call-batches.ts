import { isStoreUnavailableError } from '../strategies/lock/errors.ts';

/** How many calls one round trip carries at most, and how many round trips are in flight at once. */
export interface BatchLimits {
  readonly maxBatch: number;
  readonly maxInFlight: number;
}

/** One call waiting for its turn. */
interface QueuedCall<Call, Reply> {
  readonly call: Call;
  readonly group: number;
  /** Sent on its own: its batch failed as a whole and is being retried call by call. */
  alone: boolean;
  resolve(reply: Reply): void;
  reject(error: unknown): void;
}

/** The store did not answer (down, stalled, or the bound ran out), as opposed to refusing the call. */
function isNoAnswer(error: unknown): boolean {
  return isStoreUnavailableError(error) && (error as Error).cause === undefined;
}

/** Defers the first send to the end of the tick, so that calls issued together go out together. */
const resolved = Promise.resolve();

/**
 * Sends many calls of one store operation (every fire's claim, every run's finish) in few round
 * trips: what is issued in the same tick, or while earlier round trips are in flight, goes out
 * together, up to `maxBatch` calls per round trip (`send` runs each call atomically on its own, in
 * order, and answers each), with at most `maxInFlight` round trips in flight at once.
 *
 * The bound on what is in flight is what tells a busy store from a down one: `send` bounds the
 * time of a round trip from when it is sent, so ten thousand claims queued here wait their turn
 * without timing out, while a round trip that gets no answer within that bound means the store is
 * not answering. Then every call still queued fails with that error at once, instead of each
 * timing out in turn behind it; the fires retry them until their deadlines. (No answer is a
 * `StoreUnavailableError` without a `cause`: a store's error from the server has one.)
 *
 * With `retryAlone` (a round trip that is one transaction, as a PostgreSQL statement is), a batch
 * the store refused with an error of its own is sent again call by call, so that one bad call
 * fails alone instead of taking the others of its batch with it.
 *
 * With `groupOf` (Redis Cluster: the hash slot), a round trip holds the calls of one group only:
 * those of the first queued call's group among the next `maxBatch` queued.
 */
export class CallBatches<Call, Reply> {
  readonly #send: (calls: readonly Call[]) => Promise<readonly Reply[]>;
  readonly #groupOf: ((call: Call) => number) | undefined;
  readonly #limits: BatchLimits;
  readonly #retryAlone: boolean;
  /** Queued calls from `#head` on (a moving head: taking a batch off the front is O(batch)). */
  #queue: QueuedCall<Call, Reply>[] = [];
  #head = 0;
  #inFlight = 0;
  #pumpScheduled = false;

  constructor(options: {
    send: (calls: readonly Call[]) => Promise<readonly Reply[]>;
    groupOf?: ((call: Call) => number) | undefined;
    limits: BatchLimits;
    retryAlone?: boolean;
  }) {
    this.#send = options.send;
    this.#groupOf = options.groupOf;
    this.#limits = options.limits;
    this.#retryAlone = options.retryAlone === true;
  }

  /** Queues `call`; resolves with its reply, or rejects with what its round trip failed with. */
  run(call: Call): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const group = this.#groupOf ? this.#groupOf(call) : 0;
      this.#queue.push({ call, group, alone: false, resolve, reject });
      this.#schedulePump();
    });
  }

  #schedulePump(): void {
    if (this.#pumpScheduled || this.#inFlight >= this.#limits.maxInFlight) return;
    if (this.#head >= this.#queue.length) return;
    this.#pumpScheduled = true;
    resolved.then(this.#pump);
  }

  readonly #pump = (): void => {
    this.#pumpScheduled = false;
    while (this.#inFlight < this.#limits.maxInFlight && this.#head < this.#queue.length) {
      this.#sendBatch(this.#take());
    }
  };

  /** The next batch off the queue: up to `maxBatch` calls (of one group with `groupOf`). */
  #take(): QueuedCall<Call, Reply>[] {
    const queue = this.#queue;
    const end = Math.min(queue.length, this.#head + this.#limits.maxBatch);
    let batch: QueuedCall<Call, Reply>[];
    if (queue[this.#head]!.alone) {
      batch = [queue[this.#head++]!];
    } else if (this.#groupOf === undefined) {
      batch = queue.slice(this.#head, end);
      this.#head = end;
    } else {
      const group = queue[this.#head]!.group;
      batch = [];
      const rest: QueuedCall<Call, Reply>[] = [];
      for (let index = this.#head; index < end; index++) {
        const queued = queue[index]!;
        (queued.group === group ? batch : rest).push(queued);
      }
      // The calls of other groups keep their place at the front, in order.
      this.#head = end - rest.length;
      for (const [offset, queued] of rest.entries()) queue[this.#head + offset] = queued;
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

  #sendBatch(batch: QueuedCall<Call, Reply>[]): void {
    this.#inFlight++;
    let sent: Promise<readonly Reply[]>;
    try {
      sent = this.#send(batch.map((queued) => queued.call));
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      (replies) => {
        this.#done();
        for (const [index, queued] of batch.entries()) queued.resolve(replies[index]!);
      },
      (error: unknown) => {
        if (this.#retryAlone && batch.length > 1 && !isNoAnswer(error)) {
          // Refused as a whole (one transaction): each call again on its own, at the front.
          for (const queued of batch) queued.alone = true;
          this.#queue.splice(this.#head, 0, ...batch);
          this.#done();
          return;
        }
        // No answer from a store with little in flight: what is queued behind it would wait as
        // long. It fails now; its callers retry.
        const failing = isNoAnswer(error) ? [...batch, ...this.#drain()] : batch;
        this.#done();
        for (const queued of failing) queued.reject(error);
      },
    );
  }

  #done(): void {
    this.#inFlight--;
    this.#schedulePump();
  }

  #drain(): QueuedCall<Call, Reply>[] {
    const drained = this.#queue.slice(this.#head);
    this.#queue = [];
    this.#head = 0;
    return drained;
  }
}
