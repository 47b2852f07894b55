import type { ResilienceContext } from './context.ts';

interface AsyncLocalStorageLike<T> {
  run<R>(store: T, callback: (store: T) => R, ...args: [T]): R;
  getStore(): T | undefined;
}

type BuiltinLoader = (
  id: string,
) => { AsyncLocalStorage?: new <T>() => AsyncLocalStorageLike<T> } | undefined;

interface AmbientSlot {
  readonly storage: AsyncLocalStorageLike<ResilienceContext> | undefined;
  // Without AsyncLocalStorage the ambient context is visible in the synchronous part of the
  // callback only: after its first `await`, pass the context explicitly.
  current?: ResilienceContext | undefined;
}

// One slot per process, on globalThis: a second copy of resil (a config bundled or compiled on
// its own, a nested node_modules) then reads the context the first copy's pipeline set, so
// getLockToken() works whichever copy calls it.
// process.getBuiltinModule (Node >= 20.16, Deno, Bun) loads AsyncLocalStorage without a static
// import of a Node module, so bundlers targeting browsers see nothing to resolve. Marked pure so
// that a bundle which never runs a pipeline drops the lookup.
const slot = /* @__PURE__ */ (() => {
  const global = globalThis as { [key: symbol]: AmbientSlot | undefined } & {
    process?: { getBuiltinModule?: BuiltinLoader };
  };
  const AsyncLocalStorage = global.process?.getBuiltinModule?.('node:async_hooks')?.AsyncLocalStorage;
  const key = Symbol.for('resil.ambientContext');
  global[key] ??= { storage: AsyncLocalStorage && new AsyncLocalStorage<ResilienceContext>() };
  return global[key];
})();

const storage = slot.storage;

/**
 * Runs `callback` with `context` as the ambient context. On Node 20 the first call turns on
 * promise hooks for the whole process, so only contexts marked `ambient` are entered.
 */
export const runWithContext: <R>(
  context: ResilienceContext,
  callback: (context: ResilienceContext) => R,
) => R = storage
  ? (context, callback) => storage.run(context, callback, context)
  : (context, callback) => {
      const previous = slot.current;
      slot.current = context;
      try {
        return callback(context);
      } finally {
        slot.current = previous;
      }
    };

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
export const currentContext: () => ResilienceContext | undefined = storage
  ? () => storage.getStore()
  : () => slot.current;
