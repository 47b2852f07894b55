import { withDeadline } from '../../pipeline/time.ts';
import { firstLine, redactCredentials } from '../../scheduler/credentials.ts';
import { isStoreSetupError } from '../../strategies/lock/errors.ts';
import type { LockStore } from '../../strategies/lock/store.ts';

/**
 * A store error as one line for the terminal: its message and, when known, its root cause (the
 * socket error behind it, e.g. `connect ECONNREFUSED 127.0.0.1:6379`), never a connection URL's
 * credentials. `connectionError` is the last error the store's client reported (see
 * {@link watchStoreConnection}), used when the error itself carries no cause: a command that timed
 * out waiting for a reconnect says nothing about why the connection is down.
 */
export function describeStoreError(error: unknown, connectionError?: unknown): string {
  const message = firstLine(error instanceof Error ? error.message : String(error));
  const root = rootCause(error) ?? connectionError;
  const cause = root === undefined ? undefined : describeCause(root);
  const line = cause === undefined || message.includes(cause) ? message : `${message} (cause: ${cause})`;
  return redactCredentials(line);
}

/** The deepest `cause` under `error`, if it has one. */
function rootCause(error: unknown): unknown {
  let root: unknown;
  let current = error;
  for (let depth = 0; depth < 8; depth++) {
    const cause = (current as { cause?: unknown } | null | undefined)?.cause;
    if (cause === undefined || cause === null || cause === current) break;
    root = cause;
    current = cause;
  }
  return root;
}

/** `connect ECONNREFUSED 127.0.0.1:6379`, or the code alone when the message is empty (AggregateError). */
function describeCause(cause: unknown): string | undefined {
  if (!(cause instanceof Error))
    return typeof cause === 'string' && cause !== '' ? firstLine(cause) : undefined;
  const code = (cause as { code?: unknown }).code;
  let message = firstLine(cause.message);
  if (message === '' && cause instanceof AggregateError) {
    const inner = cause.errors.find((each): each is Error => each instanceof Error && each.message !== '');
    message = inner === undefined ? '' : firstLine(inner.message);
  }
  if (typeof code === 'string' && !message.includes(code))
    return message === '' ? code : `${code}: ${message}`;
  return message === '' ? undefined : message;
}

/** The last error the store's connection reported, while watched. */
export interface ConnectionWatch {
  readonly lastError: unknown;
  dispose(): void;
}

/**
 * Listens for `error` events on the client the shipped stores keep (`RedisLockStore#client`, an
 * ioredis client; `PostgresLockStore#pool`, a pg pool) so that an unreachable store can be reported
 * with the reason the connection is down. A store without such a client is not watched.
 */
export function watchStoreConnection(
  store: unknown,
  /** Told each connection error, described in one line (credentials removed). */
  onConnectionError?: (description: string) => void,
): ConnectionWatch {
  const { client, pool } = (store ?? {}) as { client?: unknown; pool?: unknown };
  const emitter = [client, pool].find(
    (candidate): candidate is NodeJS.EventEmitter =>
      typeof (candidate as NodeJS.EventEmitter | undefined)?.on === 'function' &&
      typeof (candidate as NodeJS.EventEmitter | undefined)?.off === 'function',
  );
  const watch = {
    lastError: undefined as unknown,
    dispose() {
      emitter?.off('error', onError);
    },
  };
  const onError = (error: unknown) => {
    watch.lastError = error;
    onConnectionError?.(describeStoreError(error));
  };
  emitter?.on('error', onError);
  return watch;
}

/**
 * For a config on the in-memory store (the default): a one-shot command is its own process, so it
 * can never see the leases and runs of `resil run` elsewhere. Said once on stderr, so that "free"
 * and "never" are not taken for the fleet's state.
 */
export function inMemoryStoreNote(store: unknown): string | undefined {
  if ((store as LockStore | undefined)?.processLocal !== true) return undefined;
  return "note: the config's store is the in-memory MemoryLockStore: it holds this process's leases and runs only; use RedisLockStore, PostgresLockStore or MysqlLockStore to see the fleet's\n";
}

/** How long a one-shot command waits for the store before it reports it unreachable. */
export const storeDeadlineMs = 5_000;

/** Why a store read failed: the one-line reason, and whether the store is not set up (not down). */
export interface StoreReadFailure {
  readonly ok: false;
  readonly reason: string;
  /** True for `StoreSetupError`: the store answers, but someone must set it up (the reason says how). */
  readonly notSetUp: boolean;
}

/**
 * `read()`, bounded by {@link storeDeadlineMs}; when it fails, the one-line reason
 * ({@link describeStoreError}, with the client's last connection error) instead of a value.
 */
export async function readStore<T>(
  store: unknown,
  read: () => Promise<T>,
): Promise<{ ok: true; value: T } | StoreReadFailure> {
  const connection = watchStoreConnection(store);
  try {
    const value = await withDeadline(read(), storeDeadlineMs, () => {
      throw new Error(`no answer within ${storeDeadlineMs} ms`);
    });
    return { ok: true, value };
  } catch (error) {
    const notSetUp = isStoreSetupError(error);
    // A store that is not set up has no connection problem to add.
    return {
      ok: false,
      reason: describeStoreError(error, notSetUp ? undefined : connection.lastError),
      notSetUp,
    };
  } finally {
    connection.dispose();
  }
}

/** `lock store unreachable: <reason>`, or `lock store not set up: <reason>`: a failed read, as commands say it. */
export function storeFailure(failure: StoreReadFailure): string {
  return `lock store ${failure.notSetUp ? 'not set up' : 'unreachable'}: ${failure.reason}`;
}
