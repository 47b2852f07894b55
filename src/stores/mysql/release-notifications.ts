import type { Pool } from 'mysql2/promise';
import { withDeadline } from '../../pipeline/time.ts';
import { releasePollMs } from './defaults.ts';
import { jsonRows, type MysqlTables, nowMs } from './schema.ts';

/** What the last read said of one waited key. */
interface Seen {
  readonly token: number | null;
  readonly free: boolean;
}

/** The waiters on one key. */
interface Waiters {
  readonly listeners: Set<() => void>;
  /** Unset until a read has covered the key: then its listeners are called once. */
  seen: Seen | undefined;
}

/**
 * The waiters' side of `MysqlLockStore.onRelease`. MySQL has no notifications, so while someone
 * waits the store reads the waited keys' lease rows, all of them in one statement, every
 * {@link releasePollMs} ms, and calls a key's listeners when its lease is free and was not at the
 * last read, or was taken and given up in between (its token moved). That is one small read per
 * store and interval however many wait, instead of each waiter's acquire backing off to one a
 * second. Best effort: a failed read is retried at the next interval, and the waiters poll anyway.
 */
export class ReleasePolls {
  readonly #pool: Pool;
  readonly #sql: string;
  readonly #timeoutMs: number;
  readonly #keys = new Map<string, Waiters>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #reading = false;
  #closed = false;

  constructor(pool: Pool, tables: MysqlTables, timeoutMs: number) {
    this.#pool = pool;
    this.#timeoutMs = timeoutMs;
    this.#sql = `SELECT j.n, l.token, l.expires_at_ms IS NULL OR l.expires_at_ms <= ${nowMs} AS free
FROM ${jsonRows('j', [['lock_key', 'VARBINARY(1255)']])} LEFT JOIN ${tables.leases} l ON l.lock_key = j.lock_key`;
  }

  /** `key` is the key as stored (with the store's prefix). */
  subscribe(key: string, listener: () => void): () => void {
    if (this.#closed) return ignore;
    let waiters = this.#keys.get(key);
    if (waiters === undefined) {
      waiters = { listeners: new Set(), seen: undefined };
      this.#keys.set(key, waiters);
    }
    // Its own entry, so that one function subscribed twice is called twice and unsubscribed once.
    const entry = () => listener();
    waiters.listeners.add(entry);
    if (waiters.seen !== undefined) {
      queueMicrotask(() => {
        if (waiters.listeners.has(entry)) notify(entry);
      });
    }
    this.#schedule(0);
    return () => {
      if (!waiters.listeners.delete(entry) || waiters.listeners.size > 0) return;
      if (this.#keys.get(key) === waiters) this.#keys.delete(key);
      if (this.#keys.size === 0) this.#stop();
    };
  }

  /** From now on nobody is woken, and waiters only poll. */
  close(): void {
    this.#closed = true;
    this.#keys.clear();
    this.#stop();
  }

  #schedule(delayMs: number): void {
    if (this.#timer !== undefined || this.#reading || this.#closed || this.#keys.size === 0) return;
    // Unref'd: it runs only while a waiter waits, and every waiter has a timer of its own.
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#read();
    }, delayMs);
    this.#timer.unref?.();
  }

  #stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #read(): Promise<void> {
    const keys = [...this.#keys.entries()];
    if (keys.length === 0) return;
    this.#reading = true;
    try {
      const read = this.#pool.execute(this.#sql, [JSON.stringify(keys.map(([key]) => [key]))]);
      const [rows] = await withDeadline(read, this.#timeoutMs, () => {
        throw new Error('no answer');
      });
      for (const row of rows as Array<{ n: number; token: number | string | null; free: number }>) {
        const waiters = keys[row.n - 1]![1];
        const seen = { token: row.token === null ? null : Number(row.token), free: Number(row.free) === 1 };
        const before = waiters.seen;
        waiters.seen = seen;
        if (before === undefined || (seen.free && (!before.free || before.token !== seen.token))) {
          for (const listener of [...waiters.listeners]) notify(listener);
        }
      }
    } catch {
      // Read again at the next interval; the waiters poll meanwhile.
    } finally {
      this.#reading = false;
      this.#schedule(releasePollMs);
    }
  }
}

/** A waiter's listener: what it throws must not stop the reads. */
function notify(listener: () => void): void {
  try {
    listener();
  } catch {
    // The waiter polls anyway.
  }
}

function ignore(): void {}
