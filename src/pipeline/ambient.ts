import type { ResilienceContext } from './context.ts';

interface AsyncLocalStorageLike<T> {
  run<R>(store: T, callback: (store: T) => R, ...args: [T]): R;
  getStore(): T | undefined;
}

type BuiltinLoader = (
  id: string,
) => { AsyncLocalStorage?: new <T>() => AsyncLocalStorageLike<T> } | undefined;

/**
 * @internal The ambient context of the process. `storage` and `current` are what every copy of
 * resil has kept there (older ones read only those two); `run` and `get` are added by
 * {@link provideAmbientContext}, on top of them.
 */
export interface AmbientSlot {
  storage?: AsyncLocalStorageLike<ResilienceContext> | undefined;
  // Without AsyncLocalStorage the ambient context is visible in the synchronous part of the
  // callback only: after its first `await`, pass the context explicitly.
  current?: ResilienceContext | undefined;
  /** Runs `callback` with `context` as the ambient context. */
  run?: <R>(context: ResilienceContext, callback: (context: ResilienceContext) => R) => R;
  /** The ambient context, if any. */
  get?: () => ResilienceContext | undefined;
}

/**
 * @internal One slot per process, on globalThis: a second copy of resil (a config bundled or
 * compiled on its own, a nested node_modules) then reads the context the first copy's pipeline
 * set, so getLockToken() works whichever copy calls it. The pipeline only reads it: until
 * {@link provideAmbientContext} fills it there is nothing to enter, so a bundle that never enters
 * the ambient context carries no AsyncLocalStorage lookup.
 */
export const ambientSlot: AmbientSlot = /* @__PURE__ */ (() =>
  ((globalThis as { [key: symbol]: AmbientSlot | undefined })[Symbol.for('resil.ambientContext')] ??= {}))();

/**
 * @internal Fills the ambient slot, once per process: called by what enters the ambient context
 * (`lockStrategy()`, a job's occurrence lease) or reads it (loading `currentContext()`). It keeps
 * the AsyncLocalStorage another copy put there, so all copies share one. On Node 20 the first
 * `run()` turns on promise hooks for the whole process, so only contexts marked `ambient` are
 * entered.
 */
export function provideAmbientContext(): void {
  const slot = ambientSlot;
  if (slot.run) return;
  // process.getBuiltinModule (Node >= 20.16, Deno, Bun) loads AsyncLocalStorage without a static
  // import of a Node module, so bundlers targeting browsers see nothing to resolve.
  const AsyncLocalStorage = (
    globalThis as { process?: { getBuiltinModule?: BuiltinLoader } }
  ).process?.getBuiltinModule?.('node:async_hooks')?.AsyncLocalStorage;
  slot.storage ??= AsyncLocalStorage && new AsyncLocalStorage<ResilienceContext>();
  const storage = slot.storage;
  if (storage) {
    slot.run = (context, callback) => storage.run(context, callback, context);
    slot.get = () => storage.getStore();
    return;
  }
  slot.run = (context, callback) => {
    const previous = slot.current;
    slot.current = context;
    try {
      return callback(context);
    } finally {
      slot.current = previous;
    }
  };
  slot.get = () => slot.current;
}

/**
 * The context of the innermost pipeline execution the caller runs in, when that execution entered
 * the ambient context: it belongs to a pipeline with a lock (or another strategy that declares
 * `usesAmbientContext`), or it started inside such an execution. Otherwise `undefined`: pipelines
 * without a lock do not enter it, so that they leave the host's promises at full speed. Pass the
 * callback's `context` on where you need it outside a lock.
 *
 * @example
 * await lockedPipeline.execute(async () => {
 *   await step();
 *   currentContext()?.operationKey; // the execution's, across awaits
 * });
 */
export const currentContext: () => ResilienceContext | undefined = /* @__PURE__ */ (() => {
  // When this module loads, not at the first call: a pipeline with a custom strategy that
  // declares `usesAmbientContext` must find the slot filled before its callback reads it.
  provideAmbientContext();
  return () => ambientSlot.get!();
})();
