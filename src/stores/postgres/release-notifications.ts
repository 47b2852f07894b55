import type { Notification, Pool, PoolClient } from 'pg';
import { withDeadline } from '../../pipeline/time.ts';
import { type PostgresTables, quoteIdentifier } from './schema.ts';

/** After the listening connection was lost while someone waits, listen again this much later. */
const relistenDelayMs = 1_000;
/** A key's waiter lock was held exclusively (a release committing): try again this much later. */
const retryLockDelayMs = 100;

/** The waiters on one key. */
interface Waiters {
  readonly listeners: Set<() => void>;
  /** True while the listening client holds the key's waiter lock (shared): releases then notify. */
  locked: boolean;
}

/**
 * The waiters' side of `PostgresLockStore.onRelease`, on one client of the pool, taken with the
 * first subscription and closed (not returned to the pool) with the last one or by `close()`:
 *
 * - it LISTENs on the store's channel, on which a release announces its key (`pg_notify`);
 * - for each key someone waits on, it holds the key's waiter lock (a two-key advisory lock,
 *   shared): a release notifies only when it cannot take that lock, so a release nobody waits for
 *   sends no NOTIFY (whose commits PostgreSQL serializes). The session holds the locks, so they go
 *   with it when its backend ends.
 *
 * A pool of one connection is left to the store's own queries: its waiters only poll. Listeners
 * are called once their key is watched (a release may have come before), on each notification
 * for it, and again after a lost connection is back. Everything else is best effort: the waiter
 * polls anyway.
 */
export class ReleaseNotifications {
  readonly #pool: Pool;
  readonly #channel: string;
  readonly #lockClass: number;
  readonly #timeoutMs: number;
  readonly #keys = new Map<string, Waiters>();
  /** The listening client, once LISTEN is in place. */
  #client: PoolClient | undefined;
  #connecting = false;
  #relisten: ReturnType<typeof setTimeout> | undefined;
  /** The error listener this store put on each client it holds (removed when it is done with one). */
  readonly #errorListeners = new WeakMap<PoolClient, () => void>();
  #closed = false;

  constructor(pool: Pool, tables: PostgresTables, timeoutMs: number) {
    this.#pool = pool;
    this.#channel = tables.releaseChannel;
    this.#lockClass = tables.waiterLockClass;
    this.#timeoutMs = timeoutMs;
  }

  subscribe(key: string, listener: () => void): () => void {
    if (this.#closed || !((this.#pool.options?.max ?? 10) >= 2)) return ignore;
    let waiters = this.#keys.get(key);
    const isNew = waiters === undefined;
    waiters ??= { listeners: new Set(), locked: false };
    this.#keys.set(key, waiters);
    // Its own entry, so that one function subscribed twice is called twice and unsubscribed once.
    const entry = () => listener();
    waiters.listeners.add(entry);
    const client = this.#client;
    if (client === undefined) this.#listen();
    else if (isNew) this.#lockKey(client, key, waiters);
    else if (waiters.locked) {
      queueMicrotask(() => {
        if (waiters.listeners.has(entry)) notify(entry);
      });
    }
    return () => this.#unsubscribe(key, waiters, entry);
  }

  /** Closes the client; from now on nobody is woken, and waiters only poll. */
  close(): void {
    this.#closed = true;
    this.#stop();
  }

  #unsubscribe(key: string, waiters: Waiters, entry: () => void): void {
    if (!waiters.listeners.delete(entry) || waiters.listeners.size > 0) return;
    if (this.#keys.get(key) === waiters) this.#keys.delete(key);
    if (this.#keys.size === 0) this.#stop();
    else if (waiters.locked && this.#client !== undefined) this.#unlockKeys(this.#client, [key]);
  }

  #listen(): void {
    if (this.#connecting || this.#client !== undefined || this.#closed) return;
    this.#connecting = true;
    connectWithin(this.#pool, this.#timeoutMs).then(
      async (client) => {
        if (this.#keys.size === 0 || this.#closed) {
          this.#connecting = false;
          client.release();
          return;
        }
        client.on('notification', this.#onNotification);
        // A client checked out of a pool has no 'error' listener but ours: without one, a
        // terminated backend would crash the process.
        const onError = () => this.#lose(client);
        this.#errorListeners.set(client, onError);
        client.on('error', onError);
        try {
          await client.query(`LISTEN ${quoteIdentifier(this.#channel)}`);
        } catch {
          this.#lose(client);
          return;
        }
        this.#connecting = false;
        if (this.#keys.size === 0 || this.#closed) {
          this.#giveBack(client);
          return;
        }
        this.#client = client;
        for (const [key, waiters] of this.#keys) this.#lockKey(client, key, waiters);
      },
      () => {
        this.#connecting = false;
        this.#scheduleRelisten();
      },
    );
  }

  /** Takes the key's waiter lock; then (or if a release holds it now) the key's listeners try again. */
  #lockKey(client: PoolClient, key: string, waiters: Waiters): void {
    client
      .query<{ locked: boolean }>(
        'SELECT pg_try_advisory_lock_shared($1::int, hashtext($2::text)) AS locked',
        [this.#lockClass, key],
      )
      .then(
        (result) => {
          const locked = result.rows[0]?.locked === true;
          if (this.#client !== client || this.#keys.get(key) !== waiters) {
            // Nobody waits on this key any more (or on this client): let go at once.
            if (locked && this.#client === client) this.#unlockKeys(client, [key]);
            return;
          }
          waiters.locked = locked;
          notifyAll(waiters.listeners);
          // Held exclusively: a release of the key is committing (its waiters were just told to
          // try), or someone else's advisory lock has the same two keys. Until it is ours, the
          // key's releases do not notify and its waiters poll.
          if (!locked) {
            setTimeout(() => {
              if (this.#client === client && this.#keys.get(key) === waiters)
                this.#lockKey(client, key, waiters);
            }, retryLockDelayMs);
          }
        },
        () => {
          // The client broke: its 'error' event drops it.
        },
      );
  }

  #unlockKeys(client: PoolClient, keys: string[]): void {
    client
      .query('SELECT pg_advisory_unlock_shared($1::int, hashtext(key)) FROM unnest($2::text[]) AS key', [
        this.#lockClass,
        keys,
      ])
      .catch(ignore);
  }

  readonly #onNotification = (message: Notification): void => {
    if (message.channel !== this.#channel || message.payload === undefined) return;
    const waiters = this.#keys.get(message.payload);
    if (waiters !== undefined) notifyAll(waiters.listeners);
  };

  /** The connection broke (a terminated backend, a failed LISTEN): drop it and listen again later. */
  #lose(client: PoolClient): void {
    if (this.#client === client) this.#client = undefined;
    this.#connecting = false;
    for (const waiters of this.#keys.values()) waiters.locked = false;
    this.#detach(client);
    destroy(client);
    this.#scheduleRelisten();
  }

  #scheduleRelisten(): void {
    if (this.#relisten !== undefined || this.#closed || this.#keys.size === 0) return;
    this.#relisten = setTimeout(() => {
      this.#relisten = undefined;
      if (this.#keys.size > 0) this.#listen();
    }, relistenDelayMs);
  }

  #stop(): void {
    if (this.#relisten !== undefined) clearTimeout(this.#relisten);
    this.#relisten = undefined;
    const client = this.#client;
    this.#client = undefined;
    for (const waiters of this.#keys.values()) waiters.locked = false;
    this.#keys.clear();
    if (client !== undefined) this.#giveBack(client);
  }

  /**
   * Closes the client's connection rather than returning it to the pool: its session ends with
   * the LISTEN and every waiter lock it holds, including one whose request is still on its way.
   */
  #giveBack(client: PoolClient): void {
    this.#detach(client);
    destroy(client);
  }

  /**
   * Removes this store's listeners from a client it is done with, so that a later error of that
   * client cannot touch the state of the one listening now; an 'error' listener stays (a broken
   * client may emit more than once, and an unheard error would crash the process).
   */
  #detach(client: PoolClient): void {
    client.removeListener('notification', this.#onNotification);
    const onError = this.#errorListeners.get(client);
    if (onError !== undefined) client.removeListener('error', onError);
    this.#errorListeners.delete(client);
    client.on('error', ignore);
  }
}

/** A pool client within `timeoutMs`, or a rejection; one that comes later goes back at once. */
function connectWithin(pool: Pool, timeoutMs: number): Promise<PoolClient> {
  let late = false;
  const connected = pool.connect().then((client) => {
    if (late) client.release();
    return client;
  });
  return withDeadline(connected, timeoutMs, () => {
    late = true;
    throw new Error(`no pool client within ${timeoutMs} ms`);
  });
}

/** Takes `client` out of the pool and closes its connection. */
function destroy(client: PoolClient): void {
  try {
    client.release(true);
  } catch {
    // Released already.
  }
}

function notifyAll(listeners: Set<() => void>): void {
  for (const listener of [...listeners]) notify(listener);
}

/** A waiter's listener: what it throws must not reach the connection's event handlers. */
function notify(listener: () => void): void {
  try {
    listener();
  } catch {
    // The waiter polls anyway.
  }
}

function ignore(): void {}
