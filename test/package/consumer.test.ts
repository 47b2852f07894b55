/**
 * resil as a user's project gets it: the packed tarball installed from the registry's point of
 * view, next to the ioredis major the user picked. The documented Redis, PostgreSQL and MySQL configs
 * must type-check there, and a job must run on a real Redis with each ioredis major.
 */
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishedManifest } from '../../scripts/pack-manifest.ts';
import { ensureBuilt, repoRoot } from '../cli/run-process.ts';
import { documentationFiles, snippetsOf } from '../docs/snippets.ts';
import { deleteKeys, redisUrlForTests, uniquePrefix } from '../support/redis.ts';

const run = promisify(execFile);
const redisUrl = await redisUrlForTests();

/**
 * What docs/redis.md tells ioredis 6 users to add as dev dependencies (its
 * `npm install --save-dev ...` advice), so that the consumer below follows the docs, not the test.
 */
function documentedIoredis6DevDependencies(): Record<string, string> {
  const text = readFileSync(join(repoRoot, 'docs/redis.md'), 'utf8');
  const advice = /ioredis 6[^`]*`npm install --save-dev ([^`]+)`/.exec(text);
  if (advice === null)
    throw new Error('docs/redis.md gives ioredis 6 users no `npm install --save-dev` advice');
  return Object.fromEntries(
    advice[1]!
      .trim()
      .split(/\s+/)
      .map((name) => [name, '*']),
  );
}

/** The first ```ts block of README.md or docs/ that contains every one of `needles`. */
function documentedBlock(...needles: string[]): string {
  const blocks = documentationFiles(repoRoot).flatMap((file) => snippetsOf(repoRoot, file));
  const found = blocks.find((block) => needles.every((needle) => block.code.includes(needle)));
  if (found === undefined) throw new Error(`no ts block in README.md or docs/ with ${needles.join(', ')}`);
  return found.code;
}

const jobFiles = {
  'jobs/heartbeat.ts': `import { defineJob } from 'resil';
export default defineJob({
  name: 'heartbeat',
  schedule: '*/5 * * * * *',
  run: async (ctx) => {
    ctx.logger.info({ token: ctx.token }, 'heartbeat');
  },
});
`,
  'jobs/nightly-report.ts': `import { defineJob } from 'resil';
export default defineJob({ name: 'nightly-report', schedule: '0 2 * * *', run: async () => {} });
`,
};

describe('a consumer project installing the packed resil', () => {
  let workspace: string;
  let tarball: string;
  let client: Redis | undefined;
  const prefixes: string[] = [];

  beforeAll(async () => {
    ensureBuilt();
    workspace = mkdtempSync(join(tmpdir(), 'resil-consumer-'));
    // What `npm pack` ships (its prepack writes the published manifest), packed from a copy so that
    // neither package.json nor dist/ changes under the other suites: dist/ is built already.
    const staging = join(workspace, 'package');
    mkdirSync(staging);
    for (const entry of ['dist', 'bin', 'src', 'LICENSE', 'README.md']) {
      cpSync(join(repoRoot, entry), join(staging, entry), { recursive: true });
    }
    const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect((manifest.scripts as Record<string, string>).prepack).toBe(
      'npm run build && node --import tsx scripts/pack-manifest.ts strip',
    );
    writeFileSync(join(staging, 'package.json'), JSON.stringify(publishedManifest(manifest), null, 2));
    const name = execFileSync(
      'npm',
      ['pack', '--ignore-scripts', '--pack-destination', workspace, '--silent', staging],
      {
        cwd: workspace,
        encoding: 'utf8',
      },
    ).trim();
    tarball = join(workspace, name.split('\n').at(-1)!);
    if (redisUrl !== undefined) client = new Redis(redisUrl);
  }, 200_000);
  afterAll(async () => {
    if (client !== undefined) {
      for (const prefix of prefixes) await deleteKeys(client, prefix);
      await client.quit();
    }
    if (workspace !== undefined) rmSync(workspace, { recursive: true, force: true });
  });

  it.each([5, 6])(
    'with ioredis %i: the documented configs type-check and a job runs on Redis',
    async (major) => {
      const directory = join(workspace, `ioredis-${major}`);
      mkdirSync(join(directory, 'jobs'), { recursive: true });
      const prefix = uniquePrefix(`consumer-${major}`);
      prefixes.push(prefix);
      const files: Record<string, string> = {
        'package.json': JSON.stringify({
          name: `consumer-ioredis-${major}`,
          private: true,
          type: 'module',
          dependencies: {
            resil: `file:${tarball}`,
            ioredis: `^${major}.0.0`,
            pg: '^8.11.0',
            mysql2: '^3.0.0',
          },
          devDependencies: {
            '@types/node': '^20.19.0',
            '@types/pg': '^8.11.0',
            typescript: '5.9.3',
            ...(major === 6 ? documentedIoredis6DevDependencies() : {}),
          },
        }),
        'tsconfig.json': JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            noEmit: true,
            allowImportingTsExtensions: true,
            types: ['node'],
          },
          include: ['*.ts', 'jobs'],
        }),
        'resil.config.ts': documentedBlock(
          'export default defineConfig(',
          'new RedisLockStore(client',
        ).replace("prefix: 'myapp:'", `prefix: ${JSON.stringify(prefix)}`),
        'postgres.config.ts': documentedBlock('export default defineConfig(', 'new PostgresLockStore('),
        'mysql.config.ts': documentedBlock('export default defineConfig(', 'new MysqlLockStore('),
        ...jobFiles,
      };
      for (const [file, content] of Object.entries(files)) writeFileSync(join(directory, file), content);

      const install = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], {
        cwd: directory,
        encoding: 'utf8',
        timeout: 240_000,
      });
      const installed = JSON.parse(
        readFileSync(join(directory, 'node_modules/ioredis/package.json'), 'utf8'),
      ) as {
        version: string;
      };
      expect(installed.version.startsWith(`${major}.`)).toBe(true);
      // One ioredis in the tree: the user's, which resil's types then name.
      expect(() =>
        readFileSync(join(directory, 'node_modules/resil/node_modules/ioredis/package.json')),
      ).toThrow();
      expect(install.stderr).not.toMatch(/ERR!/);
      // No lifecycle script of resil's for the user's npm to warn about or run.
      expect(install.stderr).not.toMatch(/resil@/);

      const tsc = await run(
        process.execPath,
        [join(directory, 'node_modules/typescript/bin/tsc'), '-p', '.'],
        {
          cwd: directory,
          encoding: 'utf8',
        },
      ).catch((error: { stdout: string; code: number }) => error);
      expect(tsc.stdout).toBe('');

      if (redisUrl === undefined) return;
      const job = await run(
        process.execPath,
        ['node_modules/resil/bin/resil.js', 'jobs', 'run', 'heartbeat'],
        {
          cwd: directory,
          encoding: 'utf8',
          env: { ...process.env, REDIS_URL: redisUrl, NO_COLOR: '1' },
          timeout: 30_000,
        },
      );
      expect(job.stderr).toMatch(/^heartbeat: success, token \d+/m);
      expect(await client!.exists(`${prefix}{heartbeat}:token`)).toBe(1);
    },
    300_000,
  );
});
