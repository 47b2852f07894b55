/** Opaque handle returned by {@link TimeProvider.setTimeout}. */
export type TimerHandle = unknown;

/**
 * The one clock every strategy reads. The system clock by default; tests pass a
 * `FakeTimeProvider` (from `resil/testing`) so no test ever sleeps.
 */
export interface TimeProvider {
  /** Wall-clock time in epoch milliseconds. */
  now(): number;
  /** Monotonic milliseconds from an arbitrary origin: use it to measure elapsed time. */
  monotonic(): number;
  /** Calls `callback` once after `ms` milliseconds. */
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The longest delay the global setTimeout honours: above 2^31 - 1 ms (about 24.8 days) it fires at once. */
export const maxTimerDelay = 2_147_483_647;

/** The handle of a delay longer than one global timer can hold: waited out in steps. */
class LongTimer {
  declare current: unknown;
}

function setLongTimeout(callback: () => void, ms: number, handle = new LongTimer()): LongTimer {
  handle.current =
    ms > maxTimerDelay
      ? setTimeout(() => setLongTimeout(callback, ms - maxTimerDelay, handle), maxTimerDelay)
      : setTimeout(callback, ms);
  return handle;
}

/**
 * The system clock: `Date.now()`, `performance.now()` and the global timers (which treat NaN and
 * negative delays as 0).
 */
export const systemTimeProvider: TimeProvider = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (callback, ms) =>
    ms > maxTimerDelay ? setLongTimeout(callback, ms) : setTimeout(callback, ms),
  clearTimeout: (handle) =>
    clearTimeout(
      (handle instanceof LongTimer ? handle.current : handle) as Parameters<typeof clearTimeout>[0],
    ),
};

/** A signal that never aborts: the default when the caller passes none. */
export const neverAbortedSignal: AbortSignal = /* @__PURE__ */ new AbortController().signal;

/**
 * Resolves after `ms` on `time`; rejects with `signal.reason` as soon as `signal` aborts,
 * clearing the timer (and removing its listener when the delay ends).
 *
 * @example
 * await delay(systemTimeProvider, 500, context.signal); // throws signal.reason on abort
 */
export function delay(
  time: TimeProvider,
  ms: number,
  signal: AbortSignal = neverAbortedSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    if (signal === neverAbortedSignal) return void time.setTimeout(resolve, ms);
    const onAbort = () => {
      time.clearTimeout(handle);
      reject(signal.reason);
    };
    const handle = time.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * What `work` settles to, or what `onDeadline()` returns (or throws) when `work` has not settled
 * after `ms` on `time`; the timer is cleared as soon as either happens. `work` itself goes on: a
 * late answer is dropped (and a late rejection handled).
 *
 * @example
 * await withDeadline(store.inspect(key), 5_000, () => {
 *   throw new Error('no answer within 5000 ms');
 * });
 */
export function withDeadline<T, D = T>(
  work: Promise<T>,
  ms: number,
  onDeadline: () => D,
  time: TimeProvider = systemTimeProvider,
): Promise<T | D> {
  return new Promise<T | D>((resolve, reject) => {
    const handle = time.setTimeout(() => {
      try {
        resolve(onDeadline());
      } catch (error) {
        reject(error);
      }
    }, ms);
    work.then(
      (value) => {
        time.clearTimeout(handle);
        resolve(value);
      },
      (error: unknown) => {
        time.clearTimeout(handle);
        reject(error);
      },
    );
  });
}
