import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

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
    include: ['test/**/*.test.ts'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
