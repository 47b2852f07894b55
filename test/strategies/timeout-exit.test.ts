import { describe, expect, it } from 'vitest';
import { runModule } from '../support/processes.ts';

// Far below the 30 s timeouts under test: a hang fails the test instead of stalling it.
const runNode = (source: string) => runModule(source, 15_000);

describe('a finished process exits at once', () => {
  it('after executions through a 30 s timeout (success, failure, retry) nothing keeps it alive', async () => {
    const result = await runNode(`
      import { ResiliencePipelineBuilder } from './src/index.ts';
      const pipeline = new ResiliencePipelineBuilder().addTimeout('30s').addRetry({ delay: 1 }).build();
      const started = performance.now();
      let calls = 0;
      const values = await Promise.all([
        pipeline.execute(async () => 'ok'),
        pipeline.execute(async (context) => { context.signal; await new Promise((r) => setTimeout(r, 5)); return 'read signal'; }),
        pipeline.execute(async () => { if (++calls < 3) throw new Error('flaky'); return 'retried'; }),
        pipeline.settle(async () => { throw new Error('always'); }).then((o) => o.error.message),
      ]);
      for (let i = 0; i < 1000; i++) await pipeline.execute(() => i);
      console.log(JSON.stringify({ values, ms: performance.now() - started }));
    `);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).values).toEqual(['ok', 'read signal', 'retried', 'always']);
    // Startup with tsx takes about a second on a loaded machine; a leaked 30 s timer would take 30.
    expect(result.ms).toBeLessThan(10_000);
  }, 20_000);

  it('after an execution that timed out on the real clock', async () => {
    const result = await runNode(`
      import { ResiliencePipelineBuilder } from './src/index.ts';
      const pipeline = new ResiliencePipelineBuilder().addTimeout(50).addTimeout('30s').build();
      const outcome = await pipeline.settle(({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))));
      console.log(outcome.error.code, outcome.error.timeout);
    `);
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe('TIMEOUT 50');
    expect(result.ms).toBeLessThan(10_000);
  }, 20_000);
});
