import type { BoundedCommands } from './bounded-commands.ts';
import { runScript, type ScriptRunner, storeScripts } from './scripts.ts';

type Argument = string | Buffer | number;

type Kind = 'acquire' | 'release';

/** One acquire or release waiting for the end of the tick. */
interface LeaseOperation {
  readonly kind: Kind;
  readonly key: string;
  /** The operation's KEYS, then its ARGV, as its single script takes them. */
  readonly argv: readonly Argument[];
  /** Redis Cluster slot of its keys, or 0 on a standalone server. */
  readonly slot: number;
  /** The caller's promise: the fencing token or `undefined` for an acquire, `undefined` for a release. */
  resolve(value: number | undefined): void;
  reject(error: unknown): void;
  /** Runs when the reply to the sent command may still arrive after the bound (an acquire's undo). */
  readonly onLateReply: (() => void) | undefined;
}

/** Defers the flush to the end of the tick, like `queueMicrotask` without its async resource. */
const resolved = Promise.resolve();

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
 * fails each of its operations with the same error. The reply settles each caller's promise
 * directly, without promises in between.
 */
export class LeaseBatches {
  readonly #client: ScriptRunner<Promise<unknown>>;
  readonly #bounded: BoundedCommands;
  readonly #slotOf: ((key: string) => number) | undefined;
  /** The operations issued this tick, until the flush; `undefined` when none is queued. */
  #queued: LeaseOperation[] | undefined;

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

  /**
   * Queues an acquire (`argv` as the acquire script takes it); resolves with its fencing token, or
   * `undefined` when the lease was held.
   */
  acquire(key: string, argv: readonly Argument[], onLateReply: () => void): Promise<number | undefined> {
    return this.#queue('acquire', key, argv, onLateReply);
  }

  /** Queues a release (`argv` as the release script takes it). */
  release(key: string, argv: readonly Argument[]): Promise<void> {
    return this.#queue('release', key, argv, undefined) as Promise<void>;
  }

  #queue(
    kind: Kind,
    key: string,
    argv: readonly Argument[],
    onLateReply: (() => void) | undefined,
  ): Promise<number | undefined> {
    return new Promise((resolve, reject) => {
      const operation: LeaseOperation = {
        kind,
        key,
        argv,
        slot: this.#slotOf ? this.#slotOf(argv[0] as string) : 0,
        resolve,
        reject,
        onLateReply,
      };
      if (this.#queued !== undefined) {
        this.#queued.push(operation);
        return;
      }
      this.#queued = [operation];
      resolved.then(this.#flush);
    });
  }

  readonly #flush = (): void => {
    const queued = this.#queued!;
    this.#queued = undefined;
    // Consecutive operations of one kind (and slot) form a call; calls go out in issue order.
    let start = 0;
    for (let end = 1; end <= queued.length; end++) {
      if (end === queued.length || queued[end]!.kind !== queued[start]!.kind) {
        this.#sendBySlot(queued.slice(start, end));
        start = end;
      }
    }
  };

  #sendBySlot(run: LeaseOperation[]): void {
    if (this.#slotOf === undefined) {
      this.#send(run);
      return;
    }
    const bySlot = new Map<number, LeaseOperation[]>();
    for (const operation of run) {
      const group = bySlot.get(operation.slot);
      if (group === undefined) bySlot.set(operation.slot, [operation]);
      else group.push(operation);
    }
    for (const group of bySlot.values()) this.#send(group);
  }

  #send(batch: LeaseOperation[]): void {
    if (batch.length === 1) {
      this.#sendOne(batch[0]!);
      return;
    }
    const client = this.#client;
    const first = batch[0]!;
    const script = scripts[first.kind].batch;
    const keysEach = script.numberOfKeys;
    const args: Argument[] = [];
    // The batch script takes every operation's KEYS, then every operation's ARGV.
    for (const operation of batch) {
      for (let index = 0; index < keysEach; index++) args.push(operation.argv[index]!);
    }
    for (const operation of batch) {
      for (let index = keysEach; index < operation.argv.length; index++) args.push(operation.argv[index]!);
    }
    const numberOfKeys = keysEach * batch.length;
    this.#bounded.submit(
      first.kind,
      batch.map((operation) => operation.key),
      (load) => runScript(client, script, load, args, numberOfKeys),
      (replies) => {
        const list = replies as unknown[];
        for (const [index, operation] of batch.entries()) settle(operation, list[index]);
      },
      (error: unknown) => {
        for (const operation of batch) operation.reject(error);
      },
      () => {
        for (const operation of batch) operation.onLateReply?.();
      },
    );
  }

  #sendOne(operation: LeaseOperation): void {
    const client = this.#client;
    const script = scripts[operation.kind].single;
    this.#bounded.submit(
      operation.kind,
      operation.key,
      (load) => runScript(client, script, load, operation.argv),
      (reply) => settle(operation, reply),
      operation.reject,
      operation.onLateReply,
    );
  }
}

/**
 * An acquire's reply is its token, or nil (a single script) or 0 (a batch) when the lease was
 * held; a release's reply is not the caller's business.
 */
function settle(operation: LeaseOperation, reply: unknown): void {
  operation.resolve(
    operation.kind === 'acquire' && typeof reply === 'number' && reply > 0 ? reply : undefined,
  );
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
