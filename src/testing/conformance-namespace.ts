/**
 * A store factory for the conformance suites. It receives a namespace unique to one test (letters,
 * digits, `-` and `:`, ending in `:`): pass it as the store's key prefix when it has one, so
 * every test starts from an empty store even on a shared server. The suites also put the
 * namespace in every key and job name they use, so a store without a prefix option works too.
 */
export type ConformanceFactory<S> = (namespace: string) => S | Promise<S>;

const runId = Math.floor(Math.random() * 2 ** 32)
  .toString(36)
  .padStart(7, '0');
let counter = 0;

/** A namespace no earlier run or other test used: `resil-conformance:<run>:<n>:`. */
export function uniqueNamespace(): string {
  counter++;
  return `resil-conformance:${runId}-${Date.now().toString(36)}:${counter}:`;
}

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, Math.max(0, ms));
  });
