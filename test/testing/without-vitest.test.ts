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
