import type { ResilienceContext } from './context.ts';

interface AsyncLocalStorageLike<T> {
  run<R>(store: T, callback: (store: T) => R, ...args: [T]): R;
  getStore(): T | undefined;
}

type BuiltinLoader = (
  id: string,
) => { AsyncLocalStorage?: new <T>() => AsyncLocalStorageLike<T> } | undefined;

// process.getBuiltinModule (Node >= 20.16, Deno, Bun) loads AsyncLocalStorage without a static
// import of a Node module, so bundlers targeting browsers see nothing to resolve. Marked pure so
// that a bundle which never runs a pipeline drops the lookup.
const storage = /* @__PURE__ */ (() => {
  const AsyncLocalStorage = (
    globalThis as { process?: { getBuiltinModule?: BuiltinLoader } }
  ).process?.getBuiltinModule?.('node:async_hooks')?.AsyncLocalStorage;
  return AsyncLocalStorage && new AsyncLocalStorage<ResilienceContext>();
})();

// Without AsyncLocalStorage the ambient context is visible in the synchronous part of the
// callback only: after its first `await`, pass the context explicitly.
let current: ResilienceContext | undefined;

/** Runs `callback` with `context` as the ambient context. */
export const runWithContext: <R>(
  context: ResilienceContext,
  callback: (context: ResilienceContext) => R,
) => R = storage
  ? (context, callback) => storage.run(context, callback, context)
  : (context, callback) => {
      const previous = current;
      current = context;
      try {
        return callback(context);
      } finally {
        current = previous;
      }
    };

/** The context of the innermost pipeline execution the caller runs in, or `undefined`. */
export const currentContext: () => ResilienceContext | undefined = storage
  ? () => storage.getStore()
  : () => current;
