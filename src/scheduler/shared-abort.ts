/** The callbacks of each signal that {@link onAbortShared} listens to, by signal. */
const callbacksOf = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `callback` once when `signal` aborts, through one `abort` listener that every caller of a
 * signal shares: a set entry each instead of a listener each, so the ten thousand fires of a
 * runner that wait on its stopping signal add and remove theirs in O(1), and Node does not warn
 * of a listener leak. Returns the function that removes `callback`.
 */
export function onAbortShared(signal: AbortSignal, callback: () => void): () => void {
  if (signal.aborted) {
    callback();
    return () => {};
  }
  let callbacks = callbacksOf.get(signal);
  if (callbacks === undefined) {
    const created = new Set<() => void>();
    callbacks = created;
    callbacksOf.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        callbacksOf.delete(signal);
        for (const each of created) each();
        created.clear();
      },
      { once: true },
    );
  }
  const added = callbacks;
  added.add(callback);
  return () => added.delete(callback);
}
