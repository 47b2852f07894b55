import { neverAbortedSignal, type TimeProvider } from '../../pipeline/time.ts';
import type { LockStore } from './store.ts';

/**
 * A waiter's poll sleeps, cut short when the store says the lease may be free (`onRelease`).
 * Without `onRelease` (or when it throws) the sleeps simply run their course: polling alone.
 */
export class ReleaseWakeUp {
  /** Set by a notification, cleared by {@link consume}: try again before sleeping. */
  #woken = false;
  #wake: (() => void) | undefined;
  readonly #unsubscribe: (() => void) | undefined;

  constructor(store: LockStore, key: string) {
    let unsubscribe: (() => void) | undefined;
    try {
      unsubscribe = store.onRelease?.(key, () => {
        this.#woken = true;
        this.#wake?.();
      });
    } catch {
      // A store whose subscription fails still has the polls.
    }
    this.#unsubscribe = unsubscribe;
  }

  /** True (once) when a notification came since the last call: the caller tries again now. */
  consume(): boolean {
    const woken = this.#woken;
    this.#woken = false;
    return woken;
  }

  /**
   * Resolves after `ms` on `time`, or at once when a notification comes (or already came);
   * rejects with `signal.reason` as soon as `signal` aborts. Leaves no timer or listener behind.
   */
  sleep(time: TimeProvider, ms: number, signal: AbortSignal = neverAbortedSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.#woken) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const end = () => {
        time.clearTimeout(handle);
        if (signal !== neverAbortedSignal) signal.removeEventListener('abort', onAbort);
        this.#wake = undefined;
      };
      const onAbort = () => {
        end();
        reject(signal.reason);
      };
      const handle = time.setTimeout(() => {
        end();
        resolve();
      }, ms);
      this.#wake = () => {
        end();
        resolve();
      };
      if (signal !== neverAbortedSignal) signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Ends the subscription: the wait is over. */
  close(): void {
    this.#wake = undefined;
    try {
      this.#unsubscribe?.();
    } catch {
      // Nothing left to do: the store drops the listener with its connection.
    }
  }
}
