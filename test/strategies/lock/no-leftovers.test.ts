import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('lock: nothing left behind', () => {
  it('a process that ran executions under a 30 s lease exits as soon as they finish', () => {
    // No unref anywhere: the process exits only if every renewal timer was cleared.
    const script = `
      import { ResiliencePipelineBuilder, LockNotAcquiredError } from './src/index.ts';
      const pipeline = new ResiliencePipelineBuilder().addLock({ key: () => 'report', ttl: '30s' }).build();
      const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
      const ok = await pipeline.execute(async () => { await sleep(20); return 'ok'; });
      const failed = await pipeline.settle(() => { throw new Error('boom'); });
      const waiting = new ResiliencePipelineBuilder().addLock({ key: () => 'report', wait: '150ms' }).build();
      const holder = pipeline.execute(() => sleep(400));
      const rejected = await waiting.settle(() => 'never');
      await holder;
      console.log(JSON.stringify({ ok, failed: failed.error.message, rejected: rejected.error instanceof LockNotAcquiredError }));
      globalThis.finishedAt = performance.now();
      process.on('exit', () => console.log('exit-after-ms', Math.round(performance.now() - globalThis.finishedAt)));
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
      cwd: root,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(child.error).toBeUndefined();
    expect(child.status, child.stderr).toBe(0);
    const lines = child.stdout.trim().split('\n');
    expect(JSON.parse(lines[0]!)).toEqual({ ok: 'ok', failed: 'boom', rejected: true });
    const exitAfter = Number(lines[1]!.split(' ')[1]);
    // A leaked renewal timer would hold the process for 10 s (ttl / 3).
    expect(exitAfter).toBeLessThan(1_000);
  });

  it('bundles PipelineBuilder + the lock strategy for a browser without any node: module', async () => {
    const result = await build({
      stdin: {
        contents: `
          export { PipelineBuilder } from './src/pipeline/pipeline-builder.ts';
          export { lockStrategy } from './src/strategies/lock/strategy.ts';
          export { MemoryLockStore } from './src/ledger/memory-store.ts';
          export { getLockToken, LOCK_TOKEN } from './src/strategies/lock/token.ts';
        `,
        resolveDir: root,
        loader: 'ts',
      },
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter((input) => input.startsWith('node:') || input.includes('node_modules'))).toEqual([]);
    expect(result.outputFiles[0]!.text).not.toMatch(/\bimport\s*[^;]*["']node:/);
  });
});
