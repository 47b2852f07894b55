import { StoreUnavailableError } from '../../strategies/lock/errors.ts';
import { redactCredentials } from '../credentials.ts';
import { isNoScriptError } from './scripts.ts';

/** What the store needs of an ioredis `Redis` or `Cluster`. */
export interface ConnectionStatus {
  readonly status: string;
  connect(): Promise<void>;
  once(event: 'ready' | 'end', listener: () => void): unknown;
  removeListener(event: 'ready' | 'end', listener: () => void): unknown;
}

/** One command in flight (or waiting for the connection), in deadline order. */
class PendingCommand {
  /** When the bound runs out (`performance.now()`), set once the command is tracked. */
  deadline = 0;
  settled = false;
  sent = false;
  /** Sent again with the script's source after a `NOSCRIPT` reply. */
  reloaded = false;
  next: PendingCommand | undefined = undefined;
  constructor(
    readonly operation: string,
    readonly key: KeysOf,
    /** `any`: one list holds commands of every reply type. */
    readonly resolve: (value: any) => void,
    readonly reject: (error: StoreUnavailableError) => void,
    /** Runs when the reply to a sent command may still arrive after the deadline. */
    readonly onLateReply: (() => void) | undefined,
  ) {}
}

const monotonic = () => performance.now();

/**
 * Runs each command within a bounded time and turns every failure into `StoreUnavailableError`.
 *
 * - A command is handed to the client only while its connection is `ready`. Otherwise it waits
 *   for `ready` (connecting a `lazyConnect` client) within the same bound, and is dropped, never
 *   queued, when the bound runs out: ioredis' offline queue would run it after we gave up.
 * - Every command has the same timeout, so deadlines come in order: one watchdog timer for the
 *   head of a FIFO list serves all commands in flight, instead of a timer per command.
 */
export class BoundedCommands {
  readonly #client: ConnectionStatus;
  readonly #timeoutMs: number;
  #head: PendingCommand | undefined;
  #tail: PendingCommand | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #ready: Promise<void> | undefined;

  constructor(client: ConnectionStatus, timeoutMs: number) {
    this.#client = client;
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Sends `send(false)` once the connection is ready and settles with its reply, or rejects with
   * `StoreUnavailableError` (naming `operation` and `key`) on an error, a closed client or the
   * timeout. A `NOSCRIPT` error sends `send(true)` (the script's source) once, within the same
   * bound. `onLateReply` runs when a sent command timed out, so the caller can undo it.
   */
  run<T>(
    operation: string,
    key: KeysOf,
    send: (loadScript: boolean) => Promise<T>,
    onLateReply?: () => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) =>
      this.submit(operation, key, send, resolve, reject, onLateReply),
    );
  }

  /**
   * {@link run} with its outcome handed to `resolve` or `reject` (exactly one of them, once; on a
   * closed client before `submit` returns) instead of a promise of its own, so the hot path can
   * resolve its caller's promise straight from the reply.
   */
  submit<T>(
    operation: string,
    key: KeysOf,
    send: (loadScript: boolean) => Promise<T>,
    resolve: (value: T) => void,
    reject: (error: StoreUnavailableError) => void,
    onLateReply?: () => void,
  ): void {
    const status = this.#client.status;
    if (status === 'end') {
      reject(closedError(operation, key));
      return;
    }
    const pending = new PendingCommand(operation, key, resolve, reject, onLateReply);
    // Sent before it is tracked: the bookkeeping runs while the command is on its way.
    if (status === 'ready') this.#dispatch(pending, send);
    this.#track(pending);
    if (status !== 'ready') {
      this.#whenReady().then(
        () => this.#dispatch(pending, send),
        () => {
          if (this.#settle(pending)) pending.reject(closedError(operation, key));
        },
      );
    }
  }

  #dispatch<T>(pending: PendingCommand, send: (loadScript: boolean) => Promise<T>): void {
    if (pending.settled) return;
    pending.sent = true;
    let reply: Promise<T>;
    try {
      reply = send(pending.reloaded);
    } catch (error) {
      reply = Promise.reject(error);
    }
    reply.then(
      (value) => {
        if (this.#settle(pending)) pending.resolve(value);
      },
      (error: unknown) => {
        if (!pending.reloaded && isNoScriptError(error)) {
          pending.reloaded = true;
          this.#dispatch(pending, send);
        } else if (this.#settle(pending)) {
          // Already ours (a replica check that came up short): its message says it all.
          pending.reject(
            error instanceof StoreUnavailableError
              ? error
              : commandError(pending.operation, pending.key, error),
          );
        }
      },
    );
  }

  /** Marks `pending` settled; false when the watchdog got there first. */
  #settle(pending: PendingCommand): boolean {
    if (pending.settled) return false;
    pending.settled = true;
    // Replies mostly come in order: dropping settled commands from the head keeps the list short.
    while (this.#head?.settled) this.#head = this.#head.next;
    if (this.#head === undefined) this.#tail = undefined;
    return true;
  }

  #track(pending: PendingCommand): void {
    pending.deadline = monotonic() + this.#timeoutMs;
    if (this.#tail === undefined) this.#head = pending;
    else this.#tail.next = pending;
    this.#tail = pending;
    if (this.#timer === undefined) this.#arm(pending.deadline);
  }

  #arm(deadline: number): void {
    this.#timer = setTimeout(this.#expire, Math.max(0, deadline - monotonic()));
    // A command in flight is held by the client's socket, one waiting for `ready` by the client's
    // reconnect timer: either keeps the process alive. The watchdog only bounds the wait, so it
    // must not keep an idle process alive on its own (it stays armed after the last reply).
    this.#timer.unref?.();
  }

  readonly #expire = (): void => {
    this.#timer = undefined;
    const now = monotonic();
    let pending = this.#head;
    while (pending !== undefined && (pending.settled || pending.deadline <= now)) {
      if (!pending.settled) {
        pending.settled = true;
        pending.reject(
          pending.sent
            ? new StoreUnavailableError(
                `Redis did not answer ${describe(pending.operation, pending.key)} within ${this.#timeoutMs} ms.`,
              )
            : new StoreUnavailableError(
                `Redis connection not ready (status "${this.#client.status}") within ${this.#timeoutMs} ms: ${describe(pending.operation, pending.key)} was not sent.`,
              ),
        );
        if (pending.sent) pending.onLateReply?.();
      }
      pending = pending.next;
    }
    this.#head = pending;
    if (pending === undefined) this.#tail = undefined;
    else this.#arm(pending.deadline);
  };

  /** One shared wait per not-ready spell: two listeners however many commands wait. */
  #whenReady(): Promise<void> {
    this.#ready ??= new Promise<void>((resolve, reject) => {
      const client = this.#client;
      const onReady = () => {
        client.removeListener('end', onEnd);
        this.#ready = undefined;
        resolve();
      };
      const onEnd = () => {
        client.removeListener('ready', onReady);
        this.#ready = undefined;
        reject();
      };
      client.once('ready', onReady);
      client.once('end', onEnd);
      // A `lazyConnect` client connects on its first command; commands wait here instead.
      if (client.status === 'wait') client.connect().catch(() => {});
    });
    return this.#ready;
  }
}

function closedError(operation: string, key: KeysOf): StoreUnavailableError {
  return new StoreUnavailableError(
    `Redis connection is closed (quit, disconnected, or gave up reconnecting): ${describe(operation, key)} was not sent.`,
  );
}

/**
 * Wraps a client error. The message keeps the client's reason (e.g. `connect ECONNREFUSED
 * 127.0.0.1:6379`) with anything shaped like URL credentials removed; the original stays as
 * `cause` for its `code`. ioredis errors for the store's own commands carry the script
 * arguments (keys, owner ids), never the connection's credentials.
 */
export function commandError(operation: string, key: KeysOf, error: unknown): StoreUnavailableError {
  const reason = error instanceof Error ? error.message : String(error);
  return new StoreUnavailableError(`Redis ${describe(operation, key)} failed: ${redactCredentials(reason)}`, {
    cause: error,
  });
}

/** The key of an operation, `''` for none, or the keys of a batch of operations (lease-batches.ts). */
export type KeysOf = string | readonly string[];

/** Keys of a batch named in messages, before "and N more". */
const keysNamed = 3;

/**
 * `acquire for "key"`, just `TIME` for an operation without a key, or for a batch
 * `acquire for "a", "b", "c" and 13 more`.
 */
export function describe(operation: string, key: KeysOf): string {
  if (typeof key !== 'string') {
    const named = key.slice(0, keysNamed).map((each) => `"${each}"`);
    const more = key.length - named.length;
    return `${operation} for ${named.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
  }
  return key === '' ? operation : `${operation} for "${key}"`;
}
