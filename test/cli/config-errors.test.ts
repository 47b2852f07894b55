import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProject, ensureCliBuilt, type Project, runCli, tsConfig } from './cli-support.ts';

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
      `${result.project.path('jobs/bad.ts')}:4:2: syntax error: Expected "}" but found "run"`,
    ]);
  });

  it('a JavaScript syntax error', async () => {
    const result = await listIn({
      'resil.config.mjs': 'export default {\n  jobs: []\n  timezone: "UTC",\n};\n',
    });
    expectConfigError(result, [
      `${result.project.path('resil.config.mjs')}:3: syntax error: Unexpected identifier`,
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
