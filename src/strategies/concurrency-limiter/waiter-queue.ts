import { neverAbortedSignal } from '../../pipeline/time.ts';

interface Waiter {
  readonly resolve: () => void;
  readonly signal: AbortSignal;
  onAbort: (() => void) | undefined;
  previous: Waiter | undefined;
  next: Waiter | undefined;
}

/**
 * First-in first-out waiters for a permit (concurrency and rate limiters). A linked list, so a
 * waiter whose caller aborts leaves the queue at once instead of blocking a slot until its turn.
 */
export class WaiterQueue {
  #head: Waiter | undefined;
  #tail: Waiter | undefined;
  #size = 0;
  readonly #onAbandon: (() => void) | undefined;

  /** @param onAbandon called after an aborted waiter left the queue. */
  constructor(onAbandon?: () => void) {
    this.#onAbandon = onAbandon;
  }

  get size(): number {
    return this.#size;
  }

  /**
   * Resolves when {@link grantNext} reaches this waiter; rejects with `signal.reason` (and leaves
   * the queue) when `signal` aborts first.
   */
  enqueue(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        signal,
        onAbort: undefined,
        previous: this.#tail,
        next: undefined,
      };
      if (this.#tail) this.#tail.next = waiter;
      else this.#head = waiter;
      this.#tail = waiter;
      this.#size++;
      if (signal !== neverAbortedSignal) {
        waiter.onAbort = () => {
          this.#remove(waiter);
          reject(signal.reason);
          this.#onAbandon?.();
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
    });
  }

  /** Resolves the oldest waiter. False when the queue is empty. */
  grantNext(): boolean {
    const waiter = this.#head;
    if (!waiter) return false;
    this.#remove(waiter);
    if (waiter.onAbort) waiter.signal.removeEventListener('abort', waiter.onAbort);
    waiter.resolve();
    return true;
  }

  #remove(waiter: Waiter): void {
    if (waiter.previous) waiter.previous.next = waiter.next;
    else this.#head = waiter.next;
    if (waiter.next) waiter.next.previous = waiter.previous;
    else this.#tail = waiter.previous;
    waiter.previous = waiter.next = undefined;
    this.#size--;
  }
}
