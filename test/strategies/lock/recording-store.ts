import { MemoryLockStore, type TimeProvider } from 'resil';

export interface StoreCall {
  readonly op: 'acquire' | 'renew' | 'release';
  readonly key: string;
  readonly owner: string;
  /** Monotonic time of the call on the test's clock. */
  readonly at: number;
}

type Override<A extends unknown[], R> = ((...args: A) => Promise<R>) | undefined;

/**
 * A real MemoryLockStore that logs every call with its time, and lets a test replace one
 * operation's behaviour (throw, refuse, hang, answer late) for as long as it needs.
 */
export class RecordingStore extends MemoryLockStore {
  readonly calls: StoreCall[] = [];
  onAcquire: Override<[key: string, owner: string, ttlMs: number], number | undefined>;
  onRenew: Override<[key: string, owner: string, ttlMs: number], boolean>;
  /** Replaces `release` (not `onRelease`, the wake-up subscription it inherits). */
  onReleaseCall: Override<[key: string, owner: string], void>;
  /**
   * What `onRelease` does: `notify` as MemoryLockStore does, `lost` subscribes but every
   * notification is lost (a store that can only be polled), `throw` fails to subscribe.
   */
  wakeUps: 'notify' | 'lost' | 'throw' = 'notify';
  /** `onRelease` subscriptions not ended yet. */
  activeWakeUps = 0;
  readonly #time: TimeProvider;

  constructor(time: TimeProvider) {
    super({ timeProvider: time });
    this.#time = time;
  }

  /** Monotonic times of the calls of `op`. */
  times(op: StoreCall['op']): number[] {
    return this.calls.filter((call) => call.op === op).map((call) => call.at);
  }

  override acquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    this.calls.push({ op: 'acquire', key, owner, at: this.#time.monotonic() });
    return this.onAcquire ? this.onAcquire(key, owner, ttlMs) : super.acquire(key, owner, ttlMs);
  }

  override renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    this.calls.push({ op: 'renew', key, owner, at: this.#time.monotonic() });
    return this.onRenew ? this.onRenew(key, owner, ttlMs) : super.renew(key, owner, ttlMs);
  }

  override release(key: string, owner: string): Promise<void> {
    this.calls.push({ op: 'release', key, owner, at: this.#time.monotonic() });
    return this.onReleaseCall ? this.onReleaseCall(key, owner) : super.release(key, owner);
  }

  override onRelease(key: string, listener: () => void): () => void {
    if (this.wakeUps === 'throw') throw new Error('subscription refused');
    const unsubscribe = super.onRelease(key, () => {
      if (this.wakeUps === 'notify') listener();
    });
    this.activeWakeUps++;
    let active = true;
    return () => {
      if (active) this.activeWakeUps--;
      active = false;
      unsubscribe();
    };
  }

  /** The parent's acquire, for overrides that delegate. */
  realAcquire(key: string, owner: string, ttlMs: number): Promise<number | undefined> {
    return super.acquire(key, owner, ttlMs);
  }

  realRenew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return super.renew(key, owner, ttlMs);
  }
}

/** A promise and its resolve function, for callbacks a test ends at a chosen instant. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** Resolves when `signal` aborts, rejecting with its reason: what a well-behaved callback does. */
export function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
