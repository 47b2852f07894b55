import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

/**
 * The fault tests (fleets of real processes, servers stopped, paused and failed over, a browser)
 * and the tests that time something tightly or shift a process's clock: one file at a time, after
 * the rest and alone, so that what they time (a takeover within a ttl, a failover within a bound,
 * a CPU cost ratio) is not slowed by other tests. The rest, mostly waiting on
 * servers and spawned processes, run two files at a time.
 */
const faultTests = [
  'test/fleet/**/*.test.ts',
  'test/stores/*/faults.test.ts',
  'test/stores/redis/sentinel.test.ts',
  'test/stores/redis/shared-rate-limit.test.ts',
  'test/stores/shared-circuit.test.ts',
  'test/dashboard/browser.test.ts',
  'test/cli/dst-run.test.ts',
  'test/cli/metrics-readiness.test.ts',
  'test/cli/instances.test.ts',
  'test/cli/postgres-operations.test.ts',
  'test/pipeline/ambient-cost.test.ts',
];

export default defineConfig({
  resolve: {
    alias: [
      { find: /^resil$/, replacement: src('index.ts') },
      { find: /^resil\/testing$/, replacement: src('testing/index.ts') },
      { find: /^resil\/redis$/, replacement: src('stores/redis/index.ts') },
      { find: /^resil\/postgres$/, replacement: src('stores/postgres/index.ts') },
      { find: /^resil\/mysql$/, replacement: src('stores/mysql/index.ts') },
      { find: /^resil\/scheduler$/, replacement: src('scheduler/index.ts') },
      { find: /^resil\/opentelemetry$/, replacement: src('opentelemetry/index.ts') },
    ],
  },
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: faultTests,
          typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
          sequence: { groupOrder: 0 },
          maxWorkers: 2,
        },
      },
      {
        extends: true,
        test: { name: 'faults', include: faultTests, sequence: { groupOrder: 1 }, maxWorkers: 1 },
      },
    ],
  },
});
