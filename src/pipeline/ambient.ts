import type { ResilienceContext } from './context.ts';

interface ContextStorage {
  run<R>(context: ResilienceContext, callback: (context: ResilienceContext) => R): R;
  current(): ResilienceContext | undefined;
}

interface AsyncLocalStorageLike<T> {
  run<R>(store: T, callback: (store: T) => R, ...args: [T]): R;
  getStore(): T | undefined;
}

type BuiltinLoader = (
  id: string,
) => { AsyncLocalStorage?: new <T>() => AsyncLocalStorageLike<T> } | undefined;

// process.getBuiltinModule (Node >= 20.16, Deno, Bun) loads AsyncLocalStorage without a static
// import of a Node module, so bundlers targeting browsers see nothing to resolve.
const getBuiltinModule = (globalThis as { process?: { getBuiltinModule?: BuiltinLoader } }).process
  ?.getBuiltinModule;
const AsyncLocalStorage = getBuiltinModule?.('node:async_hooks')?.AsyncLocalStorage;

function asyncLocalStorage(): ContextStorage | undefined {
  if (!AsyncLocalStorage) return undefined;
  const storage = new AsyncLocalStorage<ResilienceContext>();
  return {
    run: (context, callback) => storage.run(context, callback, context),
    current: () => storage.getStore(),
  };
}

// Without AsyncLocalStorage the ambient context is visible in the synchronous part of the
// callback only: after its first `await`, pass the context explicitly.
function synchronousStack(): ContextStorage {
  let current: ResilienceContext | undefined;
  return {
    run(context, callback) {
      const previous = current;
      current = context;
      try {
        return callback(context);
      } finally {
        current = previous;
      }
    },
    current: () => current,
  };
}

const storage: ContextStorage = asyncLocalStorage() ?? synchronousStack();

/** Runs `callback` with `context` as the ambient context. */
export const runWithContext = storage.run;

/** The context of the innermost pipeline execution the caller runs in, or `undefined`. */
export function currentContext(): ResilienceContext | undefined {
  return storage.current();
}
