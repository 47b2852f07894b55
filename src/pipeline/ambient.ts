import type { ResilienceContext } from './context.ts';

interface AsyncLocalStorageLike<T> {
  run<R>(store: T, callback: (store: T) => R, ...args: [T]): R;
  getStore(): T | undefined;
}

type BuiltinLoader = (
  id: string,
) => { AsyncLocalStorage?: new <T>() => AsyncLocalStorageLike<T> } | undefined;

/** @internal How the process runs callbacks in the ambient context and reads it back. */
export interface AmbientSlot {
  /** Runs `callback` with `context` as the ambient context. */
  run?: <R>(context: ResilienceContext, callback: (context: ResilienceContext) => R) => R;
  /** The ambient context, if any. */
  get?: () => ResilienceContext | undefined;
}

/**
 * @internal One slot per process, on globalThis: a second copy of resil (a config bundled or
 * compiled on its own, a nested node_modules) then reads the context the first copy's pipeline
 * set, so getLockToken() works whichever copy calls it. Empty until {@link provideAmbientContext}
 * fills it: the pipeline only reads it, so a bundle that never enters the ambient context carries
 * no AsyncLocalStorage lookup.
 */
export const ambientSlot: AmbientSlot = /* @__PURE__ */ (() =>
  ((globalThis as { [key: symbol]: AmbientSlot | undefined })[Symbol.for('resil.ambientContext')] ??= {}))();

/**
 * @internal Fills the ambient slot, once per process: called by whatever enters the ambient context
 * (the lock strategy, a job's occurrence lease) or reads it (`currentContext()`), before a pipeline
 * runs, so that a pipeline can enter it. On Node 20 the first `run()` turns on promise hooks for the
 * whole process, so only contexts marked `ambient` are entered.
 */
export function provideAmbientContext(): void {
  if (ambientSlot.run) return;
  // process.getBuiltinModule (Node >= 20.16, Deno, Bun) loads AsyncLocalStorage without a static
  // import of a Node module, so bundlers targeting browsers see nothing to resolve.
  const AsyncLocalStorage = (
    globalThis as { process?: { getBuiltinModule?: BuiltinLoader } }
  ).process?.getBuiltinModule?.('node:async_hooks')?.AsyncLocalStorage;
  if (AsyncLocalStorage) {
    const storage = new AsyncLocalStorage<ResilienceContext>();
    ambientSlot.run = (context, callback) => storage.run(context, callback, context);
    ambientSlot.get = () => storage.getStore();
    return;
  }
  // Without AsyncLocalStorage the ambient context is visible in the synchronous part of the
  // callback only: after its first `await`, pass the context explicitly.
  let current: ResilienceContext | undefined;
  ambientSlot.run = (context, callback) => {
    const previous = current;
    current = context;
    try {
      return callback(context);
    } finally {
      current = previous;
    }
  };
  ambientSlot.get = () => current;
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
