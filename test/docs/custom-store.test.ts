/**
 * The custom store of docs/stores.md: the page shows examples/custom-store/kv-lock-store.ts as it
 * is, and that store passes the conformance suites resil/testing exports.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeLockStoreConformance, describeRunLedgerConformance } from 'resil/testing';
import { describe, expect, it } from 'vitest';
import { KvLockStore } from '../../examples/custom-store/kv-lock-store.ts';
import { repoRoot } from '../cli/run-process.ts';

const test = { describe, it, expect };

describe('docs/stores.md', () => {
  it('shows examples/custom-store/kv-lock-store.ts as it is', () => {
    const page = readFileSync(join(repoRoot, 'docs/stores.md'), 'utf8');
    const source = readFileSync(join(repoRoot, 'examples/custom-store/kv-lock-store.ts'), 'utf8');
    const start = page.indexOf('```ts\n', page.indexOf('<!-- examples/custom-store/kv-lock-store.ts -->'));
    expect(start).toBeGreaterThan(0);
    const block = page.slice(start + '```ts\n'.length, page.indexOf('```\n', start + 6));
    expect(block).toBe(source);
  });
});

describeLockStoreConformance('KvLockStore (docs/stores.md)', () => new KvLockStore(), { test });
describeRunLedgerConformance('KvLockStore (docs/stores.md)', () => new KvLockStore(), { test });
