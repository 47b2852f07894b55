import type { Cluster, Redis } from 'ioredis';

/**
 * How long the key that says someone waits on a lease lives (`<prefix>{<key>}:waiters`), renewed a
 * third of it before it ends while someone still waits.
 */
export const waitersTtlMs = 30_000;

/** One channel someone waits on. */
interface Channel {
  /** The key that tells a release someone waits (it publishes only then). */
  readonly waiters: string;
  readonly listeners: Set<() => void>;
  /** True once the current connection confirmed the SUBSCRIBE; false again when it drops. */
  subscribed: boolean;
}

/**
 * The waiters' side of `RedisLockStore.onRelease`: a release publishes on the key's channel
 * (`<prefix>{<key>}:released`, see keys.ts) when the key's `waiters` key is there, and this sets
 * that key (for {@link waitersTtlMs}, renewed while someone waits) and subscribes to the channels
 * someone waits on, through one connection of its own, `client.duplicate()`: opened with the first
 * subscription, closed with the last one or by `close()`, so it never keeps an idle process alive.
 * A release nobody waits for so costs no `PUBLISH`.
 *
 * Listeners are called once their channel's SUBSCRIBE is confirmed and once its `waiters` key is
 * set (a release may have come before either), on each message, and again for every channel after
 * the connection came back (messages sent while it was down are lost). Everything else is best
 * effort: the waiter polls anyway.
 */
export class ReleaseNotifications {
  readonly #client: Redis | Cluster;
  readonly #mark: (waiters: string) => Promise<unknown>;
  readonly #channels = new Map<string, Channel>();
  #subscriber: Redis | Cluster | undefined;
  #renewals: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  /** `mark`: sets a `waiters` key for {@link waitersTtlMs} (through the store's bounded commands). */
  constructor(client: Redis | Cluster, mark: (waiters: string) => Promise<unknown>) {
    this.#client = client;
    this.#mark = mark;
  }

  /** `name`: the key's channel; `waiters`: the key that says someone waits on it. */
  subscribe(name: string, waiters: string, listener: () => void): () => void {
    if (this.#closed) return ignore;
    let channel = this.#channels.get(name);
    const isNew = channel === undefined;
    channel ??= { waiters, listeners: new Set(), subscribed: false };
    this.#channels.set(name, channel);
    if (isNew) {
      this.#markWaiting(channel);
      this.#renewals ??= setInterval(() => this.#renewAll(), waitersTtlMs / 3);
      this.#renewals.unref?.();
    }
    // Its own entry, so that one function subscribed twice is called twice and unsubscribed once.
    const entry = () => listener();
    channel.listeners.add(entry);
    const subscriber = this.#connection();
    if (channel.subscribed) {
      queueMicrotask(() => {
        if (channel.listeners.has(entry)) notify(entry);
      });
    } else if (isNew && subscriber.status === 'ready') {
      this.#subscribe(subscriber, [name]);
    }
    // Otherwise the channel's SUBSCRIBE is on its way, or goes out with all the others on 'ready'.
    return () => this.#unsubscribe(name, channel, entry);
  }

  /** Closes the connection; from now on nobody is woken, and waiters only poll. */
  close(): void {
    this.#closed = true;
    this.#channels.clear();
    this.#disconnect();
  }

  /**
   * Sets the channel's `waiters` key, then wakes its listeners if the SUBSCRIBE came first: a
   * release between the two published nothing. Left to expire when nobody waits any more: another
   * process may still wait on the key.
   */
  #markWaiting(channel: Channel): void {
    this.#mark(channel.waiters).then(() => {
      if (channel.subscribed) notifyAll(channel);
    }, ignore);
  }

  #renewAll(): void {
    for (const channel of this.#channels.values()) {
      this.#mark(channel.waiters).catch(ignore);
    }
  }

  #unsubscribe(name: string, channel: Channel, entry: () => void): void {
    if (!channel.listeners.delete(entry) || channel.listeners.size > 0) return;
    if (this.#channels.get(name) === channel) this.#channels.delete(name);
    if (this.#channels.size === 0) this.#disconnect();
    else if (this.#subscriber?.status === 'ready') this.#subscriber.unsubscribe(name).catch(ignore);
  }

  #connection(): Redis | Cluster {
    if (this.#subscriber !== undefined) return this.#subscriber;
    const subscriber = this.#client.duplicate();
    this.#subscriber = subscriber;
    // Its failures are the main connection's too, and reported there; a waiter polls meanwhile.
    subscriber.on('error', ignore);
    let reconnected = false;
    subscriber.on('ready', () => {
      if (this.#subscriber !== subscriber) return;
      this.#subscribe(subscriber, [...this.#channels.keys()]);
      // Redis itself may have restarted, or failed over, without the waiters keys: set again.
      if (reconnected) for (const channel of this.#channels.values()) this.#markWaiting(channel);
    });
    subscriber.on('close', () => {
      if (this.#subscriber !== subscriber) return;
      reconnected = true;
      for (const channel of this.#channels.values()) channel.subscribed = false;
    });
    subscriber.on('end', () => {
      // Gave up reconnecting (or was closed): the next subscription opens a new connection.
      if (this.#subscriber === subscriber) this.#subscriber = undefined;
    });
    subscriber.on('message', (name: string) => {
      const channel = this.#channels.get(name);
      if (channel?.subscribed) notifyAll(channel);
    });
    // A `lazyConnect` client's duplicate waits for a first command; subscriptions wait for 'ready'.
    if (subscriber.status === 'wait') subscriber.connect().catch(ignore);
    return subscriber;
  }

  #subscribe(subscriber: Redis | Cluster, names: string[]): void {
    if (names.length === 0) return;
    subscriber.subscribe(...names).then(() => {
      if (this.#subscriber !== subscriber) return;
      for (const name of names) {
        const channel = this.#channels.get(name);
        if (channel === undefined || channel.subscribed) continue;
        channel.subscribed = true;
        notifyAll(channel);
      }
    }, ignore);
  }

  #disconnect(): void {
    clearInterval(this.#renewals);
    this.#renewals = undefined;
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    subscriber?.disconnect();
  }
}

function notifyAll(channel: Channel): void {
  for (const listener of [...channel.listeners]) notify(listener);
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
