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

/** What the conformance suites assert with: the matchers of vitest's and jest's `expect`. */
export interface ConformanceAssertion {
  toBe(expected: unknown): void;
  toEqual(expected: unknown): void;
  toMatchObject(expected: object): void;
  toMatch(expected: string | RegExp): void;
  toBeUndefined(): void;
  toBeDefined(): void;
  toBeInstanceOf(expected: abstract new (...args: never[]) => unknown): void;
  toHaveLength(expected: number): void;
  toBeGreaterThan(expected: number): void;
  toBeGreaterThanOrEqual(expected: number): void;
  toBeLessThan(expected: number): void;
  toBeLessThanOrEqual(expected: number): void;
  readonly not: ConformanceAssertion;
  readonly rejects: { toThrow(expected?: string | RegExp): Promise<void> };
  readonly resolves: { toBeUndefined(): Promise<void> };
}

/**
 * The test functions a conformance suite registers its tests with, from your test framework:
 * vitest's or jest's `describe`, `it` and `expect`, or node:test's `describe` and `it` with the
 * `expect` package. Without them, the suites use the globals of a framework that sets them
 * (jest, vitest with `globals: true`).
 *
 * @example
 * import { describe, expect, it } from 'vitest';
 * describeLockStoreConformance('MyLockStore', factory, { test: { describe, it, expect } });
 */
export interface ConformanceTestFunctions {
  describe(name: string, body: () => void): void;
  it(name: string, body: (context: ConformanceTestContext) => Promise<void>, timeoutMs?: number): void;
  expect(actual: unknown, message?: string): ConformanceAssertion;
}

/** What a test body may get from `it`: vitest's context has `skip(note)`; jest passes none. */
export type ConformanceTestContext = { skip?(note?: string): void } | undefined;

/**
 * Skips the test that got `context`, saying why: through the framework where it can (vitest), else
 * by printing the reason (the test then ends without checking anything).
 */
export function skipTest(context: ConformanceTestContext, reason: string): void {
  if (typeof context?.skip === 'function') {
    context.skip(reason);
    return;
  }
  console.log(`skipped: ${reason}`);
}

/**
 * `functions` with an `it` whose bodies declare no parameter: jest takes a body that declares one
 * for a `done`-callback test, and fails it when it also returns a promise. The context a framework
 * passes (vitest's, node:test's) still reaches the body.
 */
function withParameterlessBodies(functions: ConformanceTestFunctions): ConformanceTestFunctions {
  return {
    describe: functions.describe,
    expect: functions.expect,
    it: (name, body, timeoutMs) =>
      functions.it(
        name,
        function (this: unknown) {
          // biome-ignore lint/complexity/noArguments: a declared parameter is what jest must not see
          return body(arguments[0] as ConformanceTestContext);
        } as never,
        timeoutMs,
      ),
  };
}

/** `given`, else the framework's globals; throws naming what to pass when there are none. */
export function testFunctionsOf(
  given: ConformanceTestFunctions | undefined,
  suite: string,
): ConformanceTestFunctions {
  if (given !== undefined) return withParameterlessBodies(given);
  const globals = globalThis as Partial<ConformanceTestFunctions>;
  if (
    typeof globals.describe === 'function' &&
    typeof globals.it === 'function' &&
    typeof globals.expect === 'function'
  )
    return withParameterlessBodies(globals as ConformanceTestFunctions);
  throw new TypeError(
    `${suite}: pass your test framework's functions, e.g. { test: { describe, it, expect } } imported from 'vitest' (or jest, or node:test with the expect package): this test process has no global describe, it and expect`,
  );
}
