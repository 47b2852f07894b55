/**
 * resil/testing in a process with no vitest at all (a jest or node:test user): importing it must not
 * load vitest, FakeTimeProvider works, and a conformance suite without test functions names what to
 * pass instead of failing on a missing import.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, repoRoot } from '../cli/run-process.ts';

const run = promisify(execFile);

describe('resil/testing without vitest', () => {
  beforeAll(() => ensureBuilt(), 200_000);

  it('imports without loading vitest; FakeTimeProvider runs; a suite without test functions says what to pass', async () => {
    const testing = pathToFileURL(join(repoRoot, 'dist/testing/index.js')).href;
    // A resolve hook that refuses vitest, as in a project that never installed it.
    const hook = `data:text/javascript,${encodeURIComponent(
      "export async function resolve(specifier, context, next) { if (specifier === 'vitest' || specifier.startsWith('vitest/')) throw new Error('vitest is not installed'); return next(specifier, context); }",
    )}`;
    const script = `
import { register } from 'node:module';
register(${JSON.stringify(hook)});
const { FakeTimeProvider, describeLockStoreConformance } = await import(${JSON.stringify(testing)});
const time = new FakeTimeProvider();
let fired = 0;
time.setTimeout(() => fired++, 1000);
await time.advance(1000);
let message = 'no error';
try {
  describeLockStoreConformance('MyLockStore', () => ({}));
} catch (error) {
  message = error.message;
}
console.log(JSON.stringify({ fired, message }));
`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot });
    expect(JSON.parse(stdout)).toEqual({
      fired: 1,
      message:
        "describeLockStoreConformance: pass your test framework's functions, e.g. { test: { describe, it, expect } } imported from 'vitest' (or jest, or node:test with the expect package): this test process has no global describe, it and expect",
    });
  });
});

describe('conformance suites and frameworks that read a test body for a done callback', () => {
  it('hand jest bodies that declare no parameter, and pass a context on to the test', async () => {
    const { describeLockStoreConformance, describeRunLedgerConformance, MemoryLockStore } = await import(
      '../../src/testing/index.ts'
    ).then(async (testing) => ({ ...testing, ...(await import('../../src/index.ts')) }));
    const bodies: Array<(context?: unknown) => Promise<void>> = [];
    const test = {
      describe: (_name: string, body: () => void) => body(),
      it: (_name: string, body: never) => bodies.push(body),
      expect,
    };
    describeLockStoreConformance('MemoryLockStore', () => new MemoryLockStore(), { test });
    describeRunLedgerConformance('MemoryLockStore', () => new MemoryLockStore(), { test });
    expect(bodies.length).toBeGreaterThan(40);
    // jest-circus treats `fn.length > 0` as a done-callback test.
    expect(bodies.filter((body) => body.length > 0)).toEqual([]);
    // The context still reaches the body: a store without onRelease() skips through it.
    const skipped: string[] = [];
    const withoutOnRelease = Object.assign(new MemoryLockStore(), { onRelease: undefined });
    const onReleaseBodies: Array<(context?: unknown) => Promise<void>> = [];
    describeLockStoreConformance('no onRelease', () => withoutOnRelease, {
      test: {
        ...test,
        it: (name: string, body: never) => {
          if (/onRelease|release through another store|is called/.test(name)) onReleaseBodies.push(body);
        },
      },
    });
    for (const body of onReleaseBodies) await body({ skip: (note: string) => skipped.push(note) });
    expect(skipped).toContain('the store has no onRelease()');
  });
});
