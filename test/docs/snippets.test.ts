/**
 * Every ```ts block of README.md and docs/ type-checks, each as a module of its own, against this
 * repository's sources (`resil`, `resil/redis`, ... map to src/). A block may use the names of
 * the reader's own application declared in `prelude` below (`buildReport`, `url`, a `pipeline`
 * or `builder` the text has just shown), and import `./jobs/heartbeat.ts`,
 * `./jobs/nightly-report.ts` or `./my-store.ts`; anything else it uses it imports itself.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type TypeScript from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../cli/run-process.ts';
import { documentationFiles, type Snippet, snippetsOf } from './snippets.ts';

const ts = createRequire(import.meta.url)('typescript') as typeof TypeScript;

/** What a snippet may take as given: the reader's own code, named as the text names it. */
const prelude = `
type Errors =
  | import('resil').TimeoutRejectedError
  | import('resil').LockNotAcquiredError
  | import('resil').LockLostError
  | import('resil').StoreUnavailableError;
declare const pipeline: import('resil').ResiliencePipeline<Errors>;
declare const builder: import('resil').ResiliencePipelineBuilder;
declare const store: import('resil/redis').RedisLockStore;
declare const pool: import('pg').Pool;
declare const redis: import('ioredis').Redis;
declare const log: { info(...args: unknown[]): void; warn(...args: unknown[]): void };
declare const request: { signal: AbortSignal };
declare const url: string;
declare const resource: string;
declare const token: number;
declare const name: string;
declare const value: string;
declare const id: string;
declare const amount: number;
declare const day: string;
declare const body: string;
declare const cachedPrices: number[];
declare function loadPrices(): Promise<number[]>;
declare function fetchPrices(options: { signal: AbortSignal }): Promise<number[]>;
declare function use(value: unknown): void;
declare function isTransient(error: unknown): boolean;
declare function work(): Promise<string>;
declare function flakyCall(): Promise<string>;
declare function loadRows(options: { signal: AbortSignal }): Promise<unknown[]>;
declare function saveReport(rows: unknown[], options: { fence: number | undefined }): Promise<void>;
declare function runReport(): Promise<void>;
declare function buildReport(options?: AbortSignal | { signal: AbortSignal }): Promise<string>;
declare function run(ctx: import('resil').JobContext): Promise<void>;
`;

const jobModules = {
  'jobs/heartbeat.ts': `import { defineJob } from 'resil';
export default defineJob({ name: 'heartbeat', schedule: '*/5 * * * * *', run: async () => {} });
`,
  'jobs/nightly-report.ts': `import { defineJob } from 'resil';
export default defineJob({ name: 'nightly-report', schedule: '0 2 * * *', run: async () => {} });
`,
  // docs/stores.md's store, as its conformance block imports it.
  'kv-lock-store.ts': "export { KvLockStore } from '../../../examples/custom-store/kv-lock-store.ts';\n",
  // The reader's own store, as the conformance section imports it.
  'my-store.ts': `import { MemoryLockStore } from 'resil';
export declare function connect(): Promise<{ close(): Promise<void> }>;
export declare class MyLockStore extends MemoryLockStore {
  constructor(client: unknown, options: { prefix: string });
}
`,
};

const snippets: Snippet[] = documentationFiles(repoRoot).flatMap((file) => snippetsOf(repoRoot, file));
// Inside the repository, so that ioredis, pg, mysql2 and @opentelemetry/api resolve from its node_modules.
const directory = join(repoRoot, 'node_modules/.cache/resil-doc-snippets');

/** Type-checks every snippet in one program; returns each one's errors as `line: message`. */
function typecheck(): Map<Snippet, string[]> {
  rmSync(directory, { recursive: true, force: true });
  mkdirSync(join(directory, 'jobs'), { recursive: true });
  writeFileSync(join(directory, 'prelude.d.ts'), prelude);
  for (const [file, content] of Object.entries(jobModules)) writeFileSync(join(directory, file), content);
  const files = snippets.map((snippet, index) => {
    const path = join(directory, `snippet-${index}.ts`);
    // A block with neither import nor export is a script to TypeScript: make it a module.
    const isModule = /^\s*(import|export)\s/m.test(snippet.code);
    writeFileSync(path, isModule ? snippet.code : `${snippet.code}export {};\n`);
    return path;
  });
  const src = (path: string) => [join(repoRoot, 'src', path)];
  const program = ts.createProgram([join(directory, 'prelude.d.ts'), ...files], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: ['node'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
    paths: {
      resil: src('index.ts'),
      'resil/testing': src('testing/index.ts'),
      'resil/redis': src('stores/redis/index.ts'),
      'resil/postgres': src('stores/postgres/index.ts'),
      'resil/mysql': src('stores/mysql/index.ts'),
      'resil/scheduler': src('scheduler/index.ts'),
      'resil/opentelemetry': src('opentelemetry/index.ts'),
    },
  });
  const errors = new Map<Snippet, string[]>();
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const index = /snippet-(\d+)\.ts$/.exec(diagnostic.file?.fileName ?? '')?.[1];
    const snippet = index === undefined ? undefined : snippets[Number(index)];
    if (snippet === undefined) {
      if (diagnostic.file?.fileName.startsWith(directory))
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      continue;
    }
    const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    const list = errors.get(snippet) ?? [];
    list.push(
      `${snippet.file}:${snippet.line + line}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`,
    );
    errors.set(snippet, list);
  }
  return errors;
}

describe('documentation snippets', () => {
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('README.md and docs/ have ts blocks to check', () => {
    expect(snippets.length).toBeGreaterThan(20);
  });

  it('every ts block type-checks', () => {
    const errors = typecheck();
    expect([...errors.values()].flat()).toEqual([]);
  }, 120_000);
});
