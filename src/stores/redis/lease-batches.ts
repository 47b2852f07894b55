import type { BoundedCommands } from './bounded-commands.ts';
import { runScript, type ScriptRunner, type StoreScript, storeScripts } from './scripts.ts';

type Argument = string | Buffer | number;

/** One acquire or release waiting for the end of the tick. */
interface LeaseOperation {
  readonly kind: 'acquire' | 'release';
  readonly key: string;
  /** The operation's KEYS and ARGV, as its single script takes them. */
  readonly keys: readonly string[];
  readonly args: readonly Argument[];
  /** Redis Cluster slot of its keys, or 0 on a standalone server. */
  readonly slot: number;
  resolve(reply: unknown): void;
  reject(error: unknown): void;
  /** Runs when the reply to the sent command may still arrive after the bound (an acquire's undo). */
  readonly onLateReply: (() => void) | undefined;
}

const scripts = {
  acquire: { single: storeScripts.acquire, batch: storeScripts.acquireBatch },
  release: { single: storeScripts.release, batch: storeScripts.releaseBatch },
} as const;

/**
 * Sends the acquires and releases issued in the same tick (until the microtask that flushes them)
 * as one script call over all their keys, instead of one round trip each: 16 concurrent acquires
 * become one `EVALSHA`. Each operation stays atomic on its own key and they run in the order they
 * were issued; consecutive operations of one kind share a call, so a release followed by an
 * acquire of the key is still seen in that order. On Redis Cluster a call holds the operations of
 * one hash slot only. A lone operation goes out as its own single script, one microtask later
 * than without batching. Every call is bounded like any other command, and a batch that fails
 * fails each of its operations with the same error.
 */
export class LeaseBatches {
  readonly #client: ScriptRunner<Promise<unknown>>;
  readonly #bounded: BoundedCommands;
  readonly #slotOf: ((key: string) => number) | undefined;
  #queued: LeaseOperation[] = [];

  /** @param slotOf the Cluster slot of a key (with the client's `keyPrefix`), or none on a standalone server */
  constructor(
    client: ScriptRunner<Promise<unknown>>,
    bounded: BoundedCommands,
    slotOf: ((key: string) => number) | undefined,
  ) {
    this.#client = client;
    this.#bounded = bounded;
    this.#slotOf = slotOf;
  }

  /** Queues one operation; resolves with the reply its single script gives (0 for a held lease in a batch). */
  run(
    kind: LeaseOperation['kind'],
    key: string,
    keys: readonly string[],
    args: readonly Argument[],
    onLateReply?: () => void,
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.#queued.length === 0) queueMicrotask(this.#flush);
      this.#queued.push({
        kind,
        key,
        keys,
        args,
        slot: this.#slotOf ? this.#slotOf(keys[0]!) : 0,
        resolve,
        reject,
        onLateReply,
      });
    });
  }

  readonly #flush = (): void => {
    const queued = this.#queued;
    this.#queued = [];
    // Consecutive operations of one kind (and slot) form a call; calls go out in issue order.
    let batch: LeaseOperation[] = [];
    const bySlot = new Map<number, LeaseOperation[]>();
    for (const operation of queued) {
      if (batch.length > 0 && batch[0]!.kind !== operation.kind) {
        this.#sendBySlot(batch, bySlot);
        batch = [];
      }
      batch.push(operation);
    }
    if (batch.length > 0) this.#sendBySlot(batch, bySlot);
  };

  #sendBySlot(batch: LeaseOperation[], bySlot: Map<number, LeaseOperation[]>): void {
    if (this.#slotOf === undefined) {
      this.#send(batch);
      return;
    }
    bySlot.clear();
    for (const operation of batch) {
      const group = bySlot.get(operation.slot);
      if (group === undefined) bySlot.set(operation.slot, [operation]);
      else group.push(operation);
    }
    for (const group of bySlot.values()) this.#send(group);
  }

  #send(batch: LeaseOperation[]): void {
    const client = this.#client;
    const first = batch[0]!;
    const { single, batch: batchScript } = scripts[first.kind];
    if (batch.length === 1) {
      this.#bounded
        .run(
          first.kind,
          first.key,
          (load) => runScript(client, single, load, [...first.keys, ...first.args]),
          first.onLateReply,
        )
        .then(first.resolve, first.reject);
      return;
    }
    const args: Argument[] = [];
    for (const operation of batch) args.push(...operation.keys);
    for (const operation of batch) args.push(...operation.args);
    const numberOfKeys = batchScript.numberOfKeys * batch.length;
    this.#bounded
      .run(
        first.kind,
        batch.map((operation) => operation.key),
        (load) => runScript(client, batchScript as StoreScript, load, args, numberOfKeys),
        () => {
          for (const operation of batch) operation.onLateReply?.();
        },
      )
      .then(
        (replies) => {
          const list = replies as unknown[];
          for (const [index, operation] of batch.entries()) operation.resolve(list[index]);
        },
        (error: unknown) => {
          for (const operation of batch) operation.reject(error);
        },
      );
  }
}

/** The Redis Cluster hash slot of `key`: CRC16 (XMODEM) of its hash tag, or of the whole key. */
export function keySlot(key: string): number {
  const bytes = utf8.encode(key);
  let start = 0;
  let end = bytes.length;
  const open = bytes.indexOf(0x7b); // {
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1); // }
    if (close > open + 1) {
      start = open + 1;
      end = close;
    }
  }
  let crc = 0;
  for (let index = start; index < end; index++) {
    crc = ((crc << 8) & 0xffff) ^ crc16Table[((crc >> 8) ^ bytes[index]!) & 0xff]!;
  }
  return crc & 16383;
}

const utf8 = new TextEncoder();

const crc16Table = /* @__PURE__ */ (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();
