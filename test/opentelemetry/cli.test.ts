/**
 * `telemetry: openTelemetry(...)` in a real `resil.config.ts`, run by the built binary: `resil jobs
 * run` loads it through the config loader and each run ends as a span, exported by the SDK.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, ensureCliBuilt, type Project, repoRoot, runCli } from '../cli/cli-support.ts';

/** Builds dist/ when what these tests run is newer than it (the CLI's own check does not look here). */
function ensureOpenTelemetryBuilt(): void {
  const newest = (directory: string) =>
    Math.max(
      ...readdirSync(join(repoRoot, directory)).map(
        (file) => statSync(join(repoRoot, directory, file)).mtimeMs,
      ),
    );
  const output = join(repoRoot, 'dist/opentelemetry/index.js');
  const sources = Math.max(newest('src/opentelemetry'), newest('src/scheduler'), newest('src/pipeline'));
  if (!existsSync(output) || statSync(output).mtimeMs < sources) {
    try {
      execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'pipe', timeout: 180_000 });
    } catch (error) {
      // tsc still emits when another part of the tree has type errors; only a missing output is fatal.
      if (!existsSync(output))
        throw new Error(`npm run build failed and ${output} is missing`, { cause: error });
    }
  }
}

let project: Project;
const spansFile = () => project.path('spans.jsonl');

beforeAll(() => {
  ensureOpenTelemetryBuilt();
  ensureCliBuilt();
  project = createProject();
  // The config imports the SDK; it resolves to this repository's copy, as resil's @opentelemetry/api does.
  symlinkSync(
    join(repoRoot, 'node_modules/@opentelemetry'),
    project.path('node_modules/@opentelemetry'),
    'dir',
  );
  project.write(
    'resil.config.ts',
    `import { appendFileSync } from 'node:fs';
import { defineConfig } from 'resil';
import { openTelemetry } from 'resil/opentelemetry';
import { BasicTracerProvider, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

// One JSON line per ended span, written at once: \`jobs run\` exits right after the run.
const exporter = {
  export(spans: ReadableSpan[], done: (result: { code: number }) => void) {
    for (const { name, attributes, status } of spans) {
      appendFileSync(${JSON.stringify(spansFile())}, JSON.stringify({ name, attributes, status }) + '\\n');
    }
    done({ code: 0 });
  },
  shutdown: async () => {},
};
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

export default defineConfig({
  instance: 'cli-instance',
  telemetry: openTelemetry({ tracer: provider.getTracer('cli-test') }),
  jobs: [
    { name: 'beat', schedule: '0 2 * * *', run: async () => {} },
    { name: 'broken', schedule: '0 3 * * *', lock: false, run: async () => { throw new Error('disk full'); } },
  ],
});
`,
  );
}, 200_000);

afterAll(() => project?.remove());

interface ExportedSpan {
  name: string;
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
}

function exportedSpans(): ExportedSpan[] {
  if (!existsSync(spansFile())) return [];
  return readFileSync(spansFile(), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ExportedSpan);
}

describe('telemetry in a config file', () => {
  it('resil jobs run: one span per run, success and failure', async () => {
    const ok = await runCli(['jobs', 'run', 'beat'], { cwd: project.directory });
    expect(ok.code, ok.stderr).toBe(0);
    const failed = await runCli(['jobs', 'run', 'broken'], { cwd: project.directory });
    expect(failed.code, failed.stderr).toBe(1);

    const [beat, broken, ...more] = exportedSpans();
    expect(more).toEqual([]);
    expect(beat).toMatchObject({
      name: 'resil.job beat',
      attributes: {
        'resil.job': 'beat',
        'resil.outcome': 'success',
        'resil.instance': 'cli-instance',
        'resil.kind': 'manual',
        'resil.token': expect.any(Number),
      },
      status: { code: 0 },
    });
    expect(beat!.attributes['resil.scheduled_at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(broken).toMatchObject({
      name: 'resil.job broken',
      attributes: { 'resil.job': 'broken', 'resil.outcome': 'failure', 'error.type': 'Error' },
      status: { code: 2, message: 'Error: disk full' },
    });
    expect(broken!.attributes).not.toHaveProperty('resil.token');
  });

  it.each([
    ['with flush, the CLI exports the batch before it exits', true],
    ['without flush, a batch still waiting is lost (the control)', false],
  ])('a batching span processor: %s', async (_, withFlush) => {
    const batched = createProject();
    symlinkSync(
      join(repoRoot, 'node_modules/@opentelemetry'),
      batched.path('node_modules/@opentelemetry'),
      'dir',
    );
    const file = batched.path('spans.jsonl');
    batched.write(
      'resil.config.ts',
      `import { appendFileSync } from 'node:fs';
import { defineConfig } from 'resil';
import { openTelemetry } from 'resil/opentelemetry';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

const exporter = {
  export(spans: ReadableSpan[], done: (result: { code: number }) => void) {
    for (const { name } of spans) appendFileSync(${JSON.stringify(file)}, name + '\\n');
    done({ code: 0 });
  },
  shutdown: async () => {},
};
// Exports every minute: a one-shot command ends long before that.
const provider = new BasicTracerProvider({
  spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 60_000 })],
});

export default defineConfig({
  telemetry: openTelemetry({ tracer: provider.getTracer('batched')${withFlush ? ', flush: () => provider.forceFlush()' : ''} }),
  jobs: [{ name: 'beat', schedule: '0 2 * * *', run: async () => {} }],
});
`,
    );
    try {
      const result = await runCli(['jobs', 'run', 'beat'], { cwd: batched.directory });
      expect(result.code, result.stderr).toBe(0);
      const exported = existsSync(file) ? readFileSync(file, 'utf8') : '';
      expect(exported).toBe(withFlush ? 'resil.job beat\n' : '');
    } finally {
      batched.remove();
    }
  });

  it('a bad telemetry value exits 2 with the config error', async () => {
    const other = createProject({
      'resil.config.ts': `import { defineConfig } from 'resil';
export default defineConfig({ telemetry: 'otel' as never, jobs: [{ name: 'a', schedule: '0 2 * * *', run: async () => {} }] });
`,
    });
    try {
      const result = await runCli(['jobs', 'list'], { cwd: other.directory });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        'option "telemetry": expected a telemetry object such as openTelemetry({ tracer, meter }) from resil/opentelemetry, got "otel"',
      );
    } finally {
      other.remove();
    }
  });
});
