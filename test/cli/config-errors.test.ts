import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  asNobodyWhenPossible,
  createProject,
  ensureCliBuilt,
  type Project,
  runCli,
  tsConfig,
} from './cli-support.ts';

const projects: Project[] = [];

beforeAll(() => ensureCliBuilt());
afterEach(() => {
  for (const project of projects.splice(0)) project.remove();
});

function project(files: Record<string, string>, packageJson?: object): Project {
  const created = createProject(files, packageJson);
  projects.push(created);
  return created;
}

async function listIn(files: Record<string, string>, args: readonly string[] = []) {
  const created = project(files);
  const result = await runCli(['jobs', 'list', ...args], { cwd: created.directory });
  return { ...result, project: created };
}

/** A config error: exit 2, no stack trace, every expected line on stderr. */
function expectConfigError(
  result: { code: number | null; stderr: string; stdout: string },
  lines: readonly string[],
) {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stdout).toBe('');
  expect(result.stderr).toMatch(/^error: bad config/);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  for (const line of lines) expect(result.stderr).toContain(line);
}

const run = 'run: async () => {}';

describe('bad config exits 2 with one precise line per problem', () => {
  it('unknown job option, with a suggestion', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig(`[{ name: 'a', schedule: '* * * * *', timout: '5s', ${run} } as never]`),
    });
    expectConfigError(result, [
      `${result.project.path('resil.config.ts')}: job "a": option "timout": unknown option (did you mean "timeout"?)`,
    ]);
  });

  it('unknown top-level and lock options', async () => {
    const result = await listIn({
      'resil.config.ts': `export default { timeZone: 'UTC', jobs: [{ name: 'a', schedule: '* * * * *', lock: { tll: 5000 }, ${run} }] };`,
    });
    expectConfigError(result, [
      'option "timeZone": unknown option (did you mean "timezone"?)',
      'job "a": option "lock.tll": unknown option (did you mean "lock.ttl"?)',
    ]);
  });

  it('bad cron, with croner’s reason', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig(`[{ name: 'a', schedule: '61 * * * *', ${run} }]`),
    });
    expectConfigError(result, [
      'job "a": option "schedule": invalid cron expression "61 * * * *": CronPattern: Invalid value for minute: 61',
    ]);
  });

  it('bad duration', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig(
        `[{ name: 'a', schedule: '* * * * *', lock: { ttl: '3x' as never }, ${run} }]`,
      ),
    });
    expectConfigError(result, ['job "a": option "lock.ttl": expected a duration', 'got "3x"']);
  });

  it('duplicate job name', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig(
        `[{ name: 'a', schedule: '* * * * *', ${run} }, { name: 'b', schedule: '* * * * *', ${run} }, { name: 'a', schedule: '0 * * * *', ${run} }]`,
      ),
    });
    expectConfigError(result, [
      'job "a": option "name": duplicate job name: jobs[0] and jobs[2] are both "a"',
    ]);
  });

  it('missing run', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig(`[{ name: 'a', schedule: '* * * * *' } as never]`),
    });
    expectConfigError(result, ['job "a": option "run": missing run']);
  });

  it('bad timezone', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig(`[{ name: 'a', schedule: '* * * * *', timezone: 'Mars/Olympus', ${run} }]`),
    });
    expectConfigError(result, [
      'job "a": option "timezone": expected an IANA timezone',
      'got "Mars/Olympus"',
    ]);
  });

  it('bad retry option, checked by the retry strategy itself', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig(
        `[{ name: 'a', schedule: '* * * * *', retry: { backoffType: 'fibonacci' as never }, ${run} }]`,
      ),
    });
    expectConfigError(result, [
      "job \"a\": option \"retry.backoffType\": expected 'constant', 'linear' or 'exponential'",
    ]);
  });

  it('every problem at once', async () => {
    const result = await listIn({
      'resil.config.ts': `export default {
  shutdownGrace: 'soon',
  jobs: [
    { name: 'a', schedule: 'every day', run: async () => {} },
    { name: 'b', schedule: '* * * * *' },
    { schedule: '* * * * *', run: async () => {} },
    { name: 'a', schedule: '* * * * *', run: async () => {}, timeout: -1 },
  ],
};`,
    });
    expectConfigError(result, [
      'bad config (6 problems)',
      'option "shutdownGrace": expected a duration',
      'job "a": option "schedule": invalid cron expression "every day"',
      'job "b": option "run": missing run',
      'job "jobs[2]": option "name": missing name',
      'job "a": option "timeout": expected a duration',
      'duplicate job name: jobs[0] and jobs[3]',
    ]);
  });

  it('a config that is not an object, or has no jobs', async () => {
    expectConfigError(await listIn({ 'resil.config.ts': 'export default 42;' }), [
      'the config must be an object',
      'got 42',
    ]);
    expectConfigError(await listIn({ 'resil.config.ts': 'export default { timezone: "UTC" };' }), [
      'option "jobs": missing jobs',
    ]);
  });
});

describe('loading errors exit 2 naming the file and line', () => {
  it('a TypeScript syntax error in a job module', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig('[job]', { imports: "import job from './jobs/bad.ts';" }),
      'jobs/bad.ts':
        "export default {\n  name: 'bad',\n  schedule: '* * * * *'\n  run: async () => {},\n};\n",
    });
    expectConfigError(result, [
      `${result.project.path('jobs/bad.ts')}:4:3: syntax error: Expected "}" but found "run"`,
    ]);
  });

  it('every syntax error at once, each at its line and 1-based column', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig('[a, b]', {
        imports: "import a from './jobs/a.ts';\nimport b from './jobs/b.ts';",
      }),
      'jobs/a.ts': "export default {\n  name: 'a'\n  schedule: '* * * * *',\n};\n",
      'jobs/b.ts': "export default { name: 'b', schedule: '* * * * *' run: async () => {} };\n",
    });
    expectConfigError(result, [
      'bad config (2 problems)',
      `${result.project.path('jobs/a.ts')}:3:3: syntax error: Expected "}" but found "schedule"`,
      `${result.project.path('jobs/b.ts')}:1:51: syntax error: Expected "}" but found "run"`,
    ]);
  });

  it('a JavaScript syntax error', async () => {
    const result = await listIn({
      'resil.config.mjs': 'export default {\n  jobs: []\n  timezone: "UTC",\n};\n',
    });
    expectConfigError(result, [
      `${result.project.path('resil.config.mjs')}:3:3: syntax error: Expected "}" but found "timezone"`,
    ]);
  });

  it('an error thrown while the config loads, without credentials', async () => {
    const result = await listIn({
      'resil.config.ts': `const url = 'redis://admin:hunter2@db.internal:6379';
function connect(): never {
  throw new Error(\`cannot connect to \${url}\`);
}
connect();
export default { jobs: [] };
`,
    });
    expectConfigError(result, [
      `${result.project.path('resil.config.ts')}:3:9: the config threw while loading: cannot connect to redis://admin:[redacted]@db.internal:6379`,
    ]);
    expect(result.stderr).not.toContain('hunter2');
  });

  it('a module the config imports is missing', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig('[job]', { imports: "import job from './jobs/missing.ts';" }),
    });
    expectConfigError(result, ['Cannot find module', 'jobs/missing.ts']);
  });

  it('--config names a file that does not exist', async () => {
    const created = project({});
    const result = await runCli(['--config', 'nope.ts', 'jobs', 'list'], { cwd: created.directory });
    expectConfigError(result, [`${created.path('nope.ts')}: config file not found`]);
  });

  it('no config anywhere up to the project root', async () => {
    const result = await listIn({});
    expectConfigError(result, ['no resil config found', 'resil.config.ts', 'pass --config <file>']);
  });

  it('a cosmiconfig meta config (.config/config.cjs) that throws: its own error is what is reported', async () => {
    const result = await listIn({
      'resil.config.mjs': `export default { jobs: [{ name: 'a', schedule: '0 5 * * *', ${run} }] };\n`,
      '.config/config.cjs': "throw new Error('the meta config is broken');\n",
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('Error: the meta config is broken');
    expect(result.stderr).not.toMatch(/ReferenceError|is not defined/);
  });

  it('bad JSON in .resilrc.json', async () => {
    const result = await listIn({ '.resilrc.json': '{ "jobs": [ }' });
    expectConfigError(result, [result.project.path('.resilrc.json')]);
  });
});

describe('config formats', () => {
  const jobModule = "export default { name: 'from-module', schedule: '0 5 * * *', run: async () => {} };\n";

  it.each([
    ['.resilrc.json', JSON.stringify({ timezone: 'UTC', jobs: ['./jobs/job.mjs'] })],
    ['.resilrc.yaml', 'timezone: UTC\njobs:\n  - ./jobs/job.mjs\n'],
    ['.resilrc', 'timezone: UTC\njobs:\n  - ./jobs/job.mjs\n'],
    [
      'resil.config.js',
      "import job from './jobs/job.mjs';\nexport default { timezone: 'UTC', jobs: [job] };\n",
    ],
    ['resil.config.mjs', "export default async () => ({ timezone: 'UTC', jobs: ['./jobs/job.mjs'] });\n"],
  ])('%s (jobs given as module paths or objects)', async (file, content) => {
    const result = await listIn({ [file]: content, 'jobs/job.mjs': jobModule }, ['--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject([
      { name: 'from-module', timezone: 'UTC', schedule: '0 5 * * *' },
    ]);
  });

  it('package.json#resil', async () => {
    const created = project(
      { 'jobs/job.mjs': jobModule },
      { type: 'module', resil: { timezone: 'UTC', jobs: ['./jobs/job.mjs'] } },
    );
    const result = await runCli(['jobs', 'list', '--json'], { cwd: created.directory });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject([{ name: 'from-module' }]);
  });

  it('a .js config that imports TypeScript jobs', async () => {
    const result = await listIn(
      {
        'resil.config.js': "import job from './jobs/job.ts';\nexport default { jobs: [job] };\n",
        'jobs/job.ts':
          "const name: string = 'typed';\nexport default { name, schedule: '0 5 * * *', run: async () => {} };\n",
      },
      ['--json'],
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject([{ name: 'typed' }]);
  });

  it('a TypeScript config in a CommonJS package', async () => {
    const created = project(
      { 'resil.config.ts': tsConfig(`[{ name: 'cjs', schedule: '0 5 * * *', ${run} }]`) },
      {},
    );
    const result = await runCli(['jobs', 'list', '--json'], { cwd: created.directory });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject([{ name: 'cjs' }]);
  });
});

describe('TypeScript configs (loaded by jiti, its transpiled files kept in a private cache)', () => {
  const job = (name: string) => `{ name: ${name}, schedule: '0 5 * * *', run: async () => {} }`;
  /** The cache of transpiled files in the temp dir of the user running the CLI. */
  const cacheDirectory = (uid = process.getuid?.()) => `resil-compile-cache-${uid ?? 'user'}`;

  /** Every file and directory in the project (not through its links), to show that loading writes nothing there. */
  function contentsOf(created: Project, directory = created.directory): string[] {
    return readdirSync(directory, { withFileTypes: true })
      .flatMap((entry) => {
        const path = join(directory, entry.name);
        return entry.isDirectory() ? [path, ...contentsOf(created, path)] : [path];
      })
      .sort();
  }

  /**
   * `resil jobs list --json` in a project, with `temp` (a fresh one when not given) as its temp dir.
   * Checks that nothing is written in the project and that the temp dir holds the cache of
   * transpiled files only; returns the entries of that cache too.
   */
  async function listJson(
    created: Project,
    extraEnv: NodeJS.ProcessEnv = {},
    args: string[] = [],
    temp?: string,
  ) {
    const directory = temp ?? mkdtempSync(join(tmpdir(), 'resil-tmpdir-'));
    const before = contentsOf(created);
    try {
      const result = await runCli([...args, 'jobs', 'list', '--json'], {
        cwd: created.directory,
        env: { TMPDIR: directory, RESIL_DEBUG: '1', ...extraEnv },
      });
      expect(contentsOf(created), 'nothing is written in the project').toEqual(before);
      const left = readdirSync(directory).filter((entry) => !entry.startsWith('tsx-'));
      expect(left.filter((entry) => entry !== cacheDirectory())).toEqual([]);
      const cache = join(directory, cacheDirectory());
      return { ...result, cached: existsSync(cache) ? readdirSync(cache).sort() : [] };
    } finally {
      if (temp === undefined) rmSync(directory, { recursive: true, force: true });
    }
  }

  function names(result: { code: number | null; stdout: string; stderr: string }): string[] {
    expect(result.code, result.stderr).toBe(0);
    return (JSON.parse(result.stdout) as { name: string }[]).map((entry) => entry.name);
  }

  it('keeps import.meta per original file, in the config and in each job module', async () => {
    const created = project({
      'resil.config.ts': tsConfig('[here, nested]', {
        imports: "import here from './jobs/here.ts';\nimport nested from './jobs/deep/nested.ts';",
        extra: 'timezone: (import.meta.filename.endsWith("resil.config.ts") ? "UTC" : "bad") as string,',
      }),
      'jobs/here.ts': `import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const text = readFileSync(new URL('./data.txt', import.meta.url), 'utf8').trim();
export default ${job("[text, fileURLToPath(import.meta.url), import.meta.filename, import.meta.dirname].join('|')")};
`,
      'jobs/data.txt': 'from-data-file\n',
      'jobs/deep/nested.ts': `export default ${job('import.meta.filename')};\n`,
    });
    const result = await listJson(created);
    expect(names(result)).toEqual([
      `from-data-file|${created.path('jobs/here.ts')}|${created.path('jobs/here.ts')}|${created.path('jobs')}`,
      created.path('jobs/deep/nested.ts'),
    ]);
  });

  it('TypeScript job modules named by path in a JSON config', async () => {
    const created = project({
      '.resilrc.json': JSON.stringify({ jobs: ['./jobs/a.ts', './jobs/b.mts'] }),
      'jobs/a.ts': `const name: string = 'a';\nexport default ${job('name')};\n`,
      'jobs/b.mts': `export default ${job("import.meta.filename.endsWith('b.mts') ? 'b' : 'wrong'")};\n`,
    });
    const result = await listJson(created);
    expect(names(result)).toEqual(['a', 'b']);
  });

  it('job modules named by path share the project modules they import, as Node would load them', async () => {
    const shared = `const counter = globalThis as { sharedLoads?: number };
export const loads = (counter.sharedLoads = (counter.sharedLoads ?? 0) + 1);
`;
    const jobOf = (name: string) =>
      `import { loads } from './shared.ts';\nexport default ${job(`'${name}-' + loads`)};\n`;
    const created = project({
      '.resilrc.json': JSON.stringify({ jobs: ['./jobs/a.ts', './jobs/b.ts', './jobs/c.mjs'] }),
      'jobs/shared.ts': shared,
      'jobs/a.ts': jobOf('a'),
      'jobs/b.ts': jobOf('b'),
      'jobs/c.mjs': `export default ${job("'c'")};\n`,
    });
    const temp = mkdtempSync(join(tmpdir(), 'resil-tmpdir-'));
    try {
      // One evaluation of shared.ts for both jobs: each sees the first load.
      const first = await listJson(created, {}, [], temp);
      expect(names(first)).toEqual(['a-1', 'b-1', 'c']);
      const again = await listJson(created, {}, [], temp);
      expect(names(again)).toEqual(['a-1', 'b-1', 'c']);

      // Another list, in another order.
      writeFileSync(created.path('.resilrc.json'), JSON.stringify({ jobs: ['./jobs/b.ts', './jobs/a.ts'] }));
      expect(names(await listJson(created, {}, [], temp))).toEqual(['b-1', 'a-1']);

      // A module that throws while it loads fails alone: the one before it loaded once and stays loaded.
      writeFileSync(
        created.path('jobs/a.ts'),
        `${jobOf('a')}if (loads !== 1) throw new Error('a loaded after shared.ts loaded again');\n`,
      );
      writeFileSync(created.path('jobs/b.ts'), `import './shared.ts';\nthrow new Error('b is broken');\n`);
      writeFileSync(created.path('.resilrc.json'), JSON.stringify({ jobs: ['./jobs/a.ts', './jobs/b.ts'] }));
      const throwing = await listJson(created, {}, [], temp);
      expect(throwing.code).toBe(2);
      expect(throwing.stderr).toContain('job "jobs[1]": cannot load job module "./jobs/b.ts": b is broken');
      expect(throwing.stderr).not.toContain('"./jobs/a.ts"');

      // One that cannot be bundled with the others (a syntax error) is named on its own.
      writeFileSync(created.path('jobs/b.ts'), 'export default { name: };\n');
      const broken = await listJson(created, {}, [], temp);
      expect(broken.code).toBe(2);
      expect(broken.stderr).toContain(
        `job "jobs[1]": cannot load job module "./jobs/b.ts": ${created.path('jobs/b.ts')}:1:`,
      );
      expect(broken.stderr).not.toContain('"./jobs/a.ts"');
    } finally {
      rmSync(temp, { recursive: true, force: true });
    }
  });

  it('the config found first wins over a TypeScript one beside it, which is not compiled', async () => {
    const created = project({
      '.resilrc.json': JSON.stringify({ jobs: [{ name: 'from-json', schedule: '0 5 * * *' }] }),
      'resil.config.ts': `export default { jobs: [${job("'from-ts'")}] };\n`,
    });
    const result = await listJson(created);
    expect(result.stderr).toContain('option "run": missing run');
    expect(result.cached).toEqual([]);
    const chosen = await listJson(created, {}, ['--config', 'resil.config.ts']);
    expect(names(chosen)).toEqual(['from-ts']);
  });

  it('maps stack traces to the original file and line', async () => {
    const created = project({
      'resil.config.ts': tsConfig('[where]', { imports: "import where from './jobs/where.ts';" }),
      'jobs/where.ts': `type Unused = { a: string };
const frame: string = new Error('here').stack!.split('\\n')[1]!;
export default ${job('frame.trim()')};
`,
    });
    const [name] = names(await listJson(created));
    // The line, not the column: jiti keeps each line where it was, not where on it the code is.
    expect(name).toMatch(new RegExp(`${created.path('jobs/where.ts').replaceAll('/', '\\/')}:2:\\d+\\)?$`));
  });

  it('top-level await, npm packages (Node conditions), resil itself and tsconfig paths', async () => {
    const created = project({
      'resil.config.ts': `import { defineConfig, MemoryLockStore } from 'resil';
import { Redis } from 'ioredis';
import flavour from 'flavoured';
import { sameFlavour } from './lib/plain.js';
import aliased from '@lib/aliased';
const delayed = await new Promise<string>((resolve) => setTimeout(() => resolve('awaited'), 10));
export default defineConfig({
  store: new MemoryLockStore(),
  jobs: [${job("[delayed, typeof Redis, flavour.kind, String(sameFlavour(flavour)), aliased].join('|')")}],
});
`,
      'lib/plain.js':
        "import flavour from 'flavoured';\nexport const sameFlavour = (other) => other === flavour;\n",
      'lib/aliased.ts': "const value: string = await Promise.resolve('aliased');\nexport default value;\n",
      'tsconfig.json': JSON.stringify({ compilerOptions: { paths: { '@lib/*': ['./lib/*'] } } }),
      'node_modules/flavoured/package.json': JSON.stringify({
        name: 'flavoured',
        main: './main.cjs',
        module: './module.mjs',
        exports: { module: './module.mjs', import: './import.mjs', require: './main.cjs' },
      }),
      'node_modules/flavoured/import.mjs': "export default { kind: 'import' };\n",
      'node_modules/flavoured/module.mjs': "export default { kind: 'module' };\n",
      'node_modules/flavoured/main.cjs': "module.exports = { kind: 'require' };\n",
    });
    const result = await listJson(created);
    expect(names(result)).toEqual(['awaited|function|import|true|aliased']);
  });

  it("imports the config's own package by its name as Node does, even where a tsconfig alias names its sources", async () => {
    const files = {
      'resil.config.ts': tsConfig('[{ ...own, name: where }]', {
        imports: "import { where } from 'selfish';\nimport own from './jobs/own.ts';",
      }),
      'jobs/own.ts': `export default ${job("'own'")};\n`,
      'src/index.ts': "export const where: string = 'from-src';\n",
      'dist/index.js': "export const where = 'from-dist';\n",
      'tsconfig.json': JSON.stringify({ compilerOptions: { paths: { selfish: ['./src/index.ts'] } } }),
    };
    const withExports = project(files, { name: 'selfish', type: 'module', exports: './dist/index.js' });
    expect(names(await listJson(withExports))).toEqual(['from-dist']);
    // Without `exports` Node has no self-reference: the alias is what resolves the name.
    const withoutExports = project(files, { name: 'selfish', type: 'module' });
    expect(names(await listJson(withoutExports))).toEqual(['from-src']);
    // Exports that tell import from require apart: left to the alias too.
    const splitExports = project(
      { ...files, 'dist/index.cjs': "exports.where = 'from-cjs';\n" },
      {
        name: 'selfish',
        type: 'module',
        exports: { import: './dist/index.js', require: './dist/index.cjs' },
      },
    );
    expect(names(await listJson(splitExports))).toEqual(['from-src']);
  });

  it('a config in a read-only directory, run as another user when possible', async () => {
    const created = project({
      'resil.config.ts': tsConfig('[ro]', { imports: "import ro from './jobs/ro.ts';" }),
      'jobs/ro.ts': `export default ${job("'ro:' + import.meta.filename.endsWith('ro.ts')")};\n`,
    });
    const before = contentsOf(created);
    chmodSync(created.path('jobs'), 0o555);
    chmodSync(created.directory, 0o555);
    const temp = mkdtempSync(join(tmpdir(), 'resil-tmpdir-'));
    chmodSync(temp, 0o777);
    try {
      const result = await runCli(['jobs', 'list', '--json'], {
        cwd: created.directory,
        prefix: asNobodyWhenPossible(),
        env: { HOME: '/nonexistent', TMPDIR: temp },
      });
      expect(names(result)).toEqual(['ro:true']);
      expect(contentsOf(created)).toEqual(before);
      // The cache of the user it ran as, and nothing else.
      expect(readdirSync(temp)).toEqual([expect.stringMatching(/^resil-compile-cache-\d+$/)]);
    } finally {
      chmodSync(created.directory, 0o755);
      chmodSync(created.path('jobs'), 0o755);
      rmSync(temp, { recursive: true, force: true });
    }
  });

  it('a TypeScript syntax error in the config itself names its line and column', async () => {
    const result = await listIn({
      'resil.config.ts': "const jobs: string[] = [];\nexport default { jobs, timezone: 'UTC' as };\n",
    });
    expectConfigError(result, [
      `${result.project.path('resil.config.ts')}:2:43: syntax error: Unexpected "}"`,
    ]);
  });

  it('an error thrown by a job module while it loads names that module and line', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig('[job]', { imports: "import job from './jobs/boom.ts';" }),
      'jobs/boom.ts': `interface Options { retries: number }
export function check(options: Options): Options {
  if (options.retries < 0) throw new RangeError('retries must be >= 0');
  return options;
}
check({ retries: -1 });
export default {};
`,
    });
    expectConfigError(result, [
      `${result.project.path('jobs/boom.ts')}:3:34: the config threw while loading: retries must be >= 0`,
    ]);
  });

  it('a missing npm package is named, at the module that imports it', async () => {
    const result = await listIn({
      'resil.config.ts': tsConfig('[job]', { imports: "import job from './jobs/needs.ts';" }),
      'jobs/needs.ts': "import missing from 'not-installed-anywhere';\nexport default missing;\n",
    });
    expectConfigError(result, [
      `${result.project.path('jobs/needs.ts')}: Cannot find package 'not-installed-anywhere'`,
    ]);
  });

  it('loads JavaScript that imports TypeScript through other JavaScript', async () => {
    const created = project({
      'resil.config.js': "import job from './jobs/index.js';\nexport default { jobs: [job] };\n",
      'jobs/index.js': "export { default } from './real.ts';\n",
      'jobs/real.ts': `export default ${job("'js-chain'")};\n`,
    });
    const result = await listJson(created);
    expect(names(result)).toEqual(['js-chain']);
  });

  it('loads a computed import, import.meta.resolve and CommonJS TypeScript', async () => {
    const cases: [string, Record<string, string>, Record<string, unknown>?][] = [
      [
        'a computed import',
        {
          'resil.config.ts':
            "const path: string = './jobs/real.ts';\nconst job = (await import(path)).default;\nexport default { jobs: [job] };\n",
          'jobs/real.ts': `export default ${job("'computed'")};\n`,
        },
      ],
      [
        'import.meta.resolve',
        {
          'resil.config.ts': `export default { jobs: [${job("import.meta.resolve('./jobs/x.ts').endsWith('/jobs/x.ts') ? 'resolved' : 'wrong'")}] };\n`,
          // jiti resolves as require.resolve does: the module must be there (Node's would not look).
          'jobs/x.ts': 'export {};\n',
        },
      ],
      [
        'CommonJS TypeScript',
        {
          'resil.config.ts': `const { basename } = require('node:path');\nmodule.exports = { jobs: [${job('basename(__filename)')}] };\n`,
        },
        {},
      ],
    ];
    const expected = ['computed', 'resolved', 'resil.config.ts'];
    for (const [index, [label, files, packageJson]] of cases.entries()) {
      const created = createProject(files, packageJson);
      projects.push(created);
      const result = await listJson(created);
      expect(names(result), label).toEqual([expected[index]]);
    }
  });

  it('starts from the cache of transpiled files while nothing changed, and transpiles again when a file does', async () => {
    const created = project({
      'resil.config.ts': tsConfig('[job]', { imports: "import job from './jobs/job.ts';" }),
      'jobs/job.ts': `export default ${job("'first'")};\n`,
    });
    const temp = mkdtempSync(join(tmpdir(), 'resil-tmpdir-'));
    try {
      const first = await listJson(created, {}, [], temp);
      expect(names(first)).toEqual(['first']);
      // jiti's entry for the config: the directory's and the file's names, a hash of its path.
      const entry = join(temp, cacheDirectory(), first.cached.find((name) => name.includes('resil.config'))!);
      const written = statSync(entry).mtimeMs;

      const second = await listJson(created, {}, [], temp);
      expect(names(second)).toEqual(['first']);
      expect(statSync(entry).mtimeMs, 'an unchanged config is not compiled again').toBe(written);

      // Same size and the same modification time: the content tells.
      const { atime, mtime } = statSync(created.path('jobs/job.ts'));
      created.write('jobs/job.ts', `export default ${job("'later'")};\n`);
      utimesSync(created.path('jobs/job.ts'), atime, mtime);
      const third = await listJson(created, {}, [], temp);
      expect(names(third)).toEqual(['later']);
      expect(third.cached).toEqual(first.cached);
    } finally {
      rmSync(temp, { recursive: true, force: true });
    }
  });

  interface Recompile {
    files: Record<string, string>;
    /** Links and the like, which `files` cannot say. */
    prepare?: (created: Project) => void;
    change: (created: Project) => void;
    /** The job's name before and after the change, or how to work it out in the project. */
    expected: readonly [string, string] | ((created: Project) => string);
  }

  /**
   * Lists the jobs of a project twice on one temp dir, with `change` in between: the second
   * listing must see the change, as a fresh start does (checked too), not what the first cached.
   */
  async function expectRecompiled(label: string, { files, prepare, change, expected }: Recompile) {
    const created = project(files);
    prepare?.(created);
    const [nameBefore, nameAfter] =
      typeof expected === 'function' ? [expected, expected] : [() => expected[0], () => expected[1]];
    const temp = mkdtempSync(join(tmpdir(), 'resil-tmpdir-'));
    try {
      const first = await listJson(created, {}, [], temp);
      expect(names(first), label).toEqual([nameBefore(created)]);
      change(created);
      expect(names(await listJson(created)), `${label}, from an empty cache`).toEqual([nameAfter(created)]);
      const second = await listJson(created, {}, [], temp);
      expect(names(second), `${label}, with the first start's files in the cache`).toEqual([
        nameAfter(created),
      ]);
      const entries = second.cached.map((name) => join(temp, cacheDirectory(), name));
      const written = entries.map((entry) => statSync(entry)).map(({ ino, mtimeMs }) => ({ ino, mtimeMs }));
      expect(names(await listJson(created, {}, [], temp)), `${label}, again`).toEqual([nameAfter(created)]);
      expect(
        entries.map((entry) => statSync(entry)),
        `${label}: the cached files are used as they are`,
      ).toMatchObject(written);
    } finally {
      rmSync(temp, { recursive: true, force: true });
    }
  }

  /** Points `node_modules/<name>` at `.pnpm/<name>@<version>/node_modules/<name>`, as pnpm does. */
  function linkAsPnpm(created: Project, name: string, version: string) {
    const link = created.path(`node_modules/${name}`);
    rmSync(link, { force: true });
    mkdirSync(dirname(link), { recursive: true });
    const target = created.path(
      `node_modules/.pnpm/${name.replace('/', '+')}@${version}/node_modules/${name}`,
    );
    symlinkSync(relative(dirname(link), target), link, 'dir');
  }

  it('sees a change in a file the nearest tsconfig.json extends: a chain, an array, packages', async () => {
    /** `@lib/*` aliased to `<directory>/*` beside the tsconfig.json the chain starts at. */
    const aliasTo = (directory: string) =>
      JSON.stringify({ compilerOptions: { paths: { '@lib/*': [`\${configDir}/${directory}/*`] } } });
    const aliased = {
      'resil.config.ts': tsConfig(`[${job('name')}]`, { imports: "import name from '@lib/name';" }),
      'one/name.ts': "const name: string = 'one';\nexport default name;\n",
      'two/name.ts': "const name: string = 'two';\nexport default name;\n",
    };
    await expectRecompiled('relative paths, one without .json, and a chain', {
      files: {
        ...aliased,
        'tsconfig.json': JSON.stringify({ extends: './config/base' }),
        // With comments and a trailing comma, as tsc and esbuild read it.
        'config/base.json': '{\n  // shared\n  "extends": "../shared.json", /* the aliases */\n}\n',
        'shared.json': aliasTo('one'),
      },
      change: (created) => created.write('shared.json', aliasTo('two')),
      expected: ['one', 'two'],
    });
    await expectRecompiled('an array, the last winning, into a package through its package.json#tsconfig', {
      files: {
        ...aliased,
        'tsconfig.json': JSON.stringify({ extends: ['./first.json', '@acme/tsconfig'] }),
        'first.json': aliasTo('zero'),
        'node_modules/@acme/tsconfig/package.json': JSON.stringify({
          name: '@acme/tsconfig',
          tsconfig: './base.json',
        }),
        'node_modules/@acme/tsconfig/base.json': JSON.stringify({ extends: './aliases' }),
        'node_modules/@acme/tsconfig/aliases.json': aliasTo('one'),
      },
      change: (created) => created.write('node_modules/@acme/tsconfig/aliases.json', aliasTo('two')),
      expected: ['one', 'two'],
    });
    const strict = (version: string, directory: string) => {
      const root = `node_modules/.pnpm/@acme+strict@${version}/node_modules/@acme/strict`;
      return {
        [`${root}/package.json`]: JSON.stringify({
          name: '@acme/strict',
          version,
          exports: { './node': { require: './node.json' } },
        }),
        [`${root}/node.json`]: aliasTo(directory),
      };
    };
    await expectRecompiled('a package subpath through its exports, relinked as pnpm does', {
      files: {
        ...aliased,
        'tsconfig.json': JSON.stringify({ extends: '@acme/strict/node' }),
        ...strict('1.0.0', 'one'),
        ...strict('2.0.0', 'two'),
      },
      prepare: (created) => linkAsPnpm(created, '@acme/strict', '1.0.0'),
      change: (created) => linkAsPnpm(created, '@acme/strict', '2.0.0'),
      expected: ['one', 'two'],
    });
  });

  it('sees a package the config imports resolve elsewhere', async () => {
    const importing = (specifier: string) => ({
      'resil.config.ts': tsConfig(`[${job('name')}]`, { imports: `import name from '${specifier}';` }),
    });
    /** A package whose module says where it is. */
    const whereAmI = (root: string, version: string) => ({
      [`${root}/package.json`]: JSON.stringify({ name: 'dep', version, exports: './index.js' }),
      [`${root}/index.js`]:
        "import { fileURLToPath } from 'node:url';\nexport default fileURLToPath(import.meta.url);\n",
    });
    await expectRecompiled('pnpm relinks node_modules/dep (pnpm up), the old version still on disk', {
      files: {
        ...importing('dep'),
        ...whereAmI('node_modules/.pnpm/dep@1.0.0/node_modules/dep', '1.0.0'),
        ...whereAmI('node_modules/.pnpm/dep@2.0.0/node_modules/dep', '2.0.0'),
      },
      prepare: (created) => linkAsPnpm(created, 'dep', '1.0.0'),
      change: (created) => linkAsPnpm(created, 'dep', '2.0.0'),
      expected: (created) => realpathSync(created.path('node_modules/dep/index.js')),
    });
    await expectRecompiled('pnpm relinks it to identical files elsewhere (another peer dependency)', {
      files: {
        ...importing('dep'),
        ...whereAmI('node_modules/.pnpm/dep@1.0.0/node_modules/dep', '1.0.0'),
        ...whereAmI('node_modules/.pnpm/dep@1.0.0_peer@2/node_modules/dep', '1.0.0'),
      },
      prepare: (created) => linkAsPnpm(created, 'dep', '1.0.0'),
      change: (created) => linkAsPnpm(created, 'dep', '1.0.0_peer@2'),
      expected: (created) => realpathSync(created.path('node_modules/dep/index.js')),
    });
    const exporting = (file: string) => JSON.stringify({ name: 'dep', exports: file });
    await expectRecompiled('npm upgrades it in place, its exports now another file', {
      files: {
        ...importing('dep'),
        'node_modules/dep/package.json': exporting('./v1.js'),
        'node_modules/dep/v1.js': "export default 'v1';\n",
        'node_modules/dep/v2.js': "export default 'v2';\n",
      },
      change: (created) => created.write('node_modules/dep/package.json', exporting('./v2.js')),
      expected: ['v1', 'v2'],
    });
    await expectRecompiled('a copy of it is installed nearer the importing module (a workspace)', {
      files: {
        'resil.config.ts': tsConfig('[app]', { imports: "import app from './packages/app/job.ts';" }),
        'packages/app/job.ts': `import name from 'dep';\nexport default ${job('name')};\n`,
        'node_modules/dep/package.json': exporting('./index.js'),
        'node_modules/dep/index.js': "export default 'hoisted';\n",
      },
      change: (created) => {
        created.write('packages/app/node_modules/dep/package.json', exporting('./index.js'));
        created.write('packages/app/node_modules/dep/index.js', "export default 'own';\n");
      },
      expected: ['hoisted', 'own'],
    });
    await expectRecompiled('a package imported when it runs, installed later', {
      files: {
        'resil.config.ts': tsConfig(`[${job('name')}]`, {
          imports:
            "const name: string = await import('later').then((module) => module.default, () => 'absent');",
        }),
      },
      change: (created) => {
        created.write('node_modules/later/package.json', exporting('./index.js'));
        created.write('node_modules/later/index.js', "export default 'installed';\n");
      },
      expected: ['absent', 'installed'],
    });
  });

  it('does not use a cache directory that others can write', async () => {
    const created = project({ 'resil.config.ts': tsConfig(`[${job("'shared'")}]`) });
    const temp = mkdtempSync(join(tmpdir(), 'resil-tmpdir-'));
    const shared = join(temp, cacheDirectory());
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    try {
      const result = await listJson(created, {}, [], temp);
      expect(names(result)).toEqual(['shared']);
      expect(result.cached).toEqual([]);
    } finally {
      rmSync(temp, { recursive: true, force: true });
    }
  });
});
