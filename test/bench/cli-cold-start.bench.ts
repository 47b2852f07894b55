/**
 * Cold start of the `resil` binary against a bare `node -e 0`: each command is a fresh process,
 * measured round by round (interleaved, so load on the machine hits every command alike), median
 * wall time per command and its ratio to node. `jobs list` runs on this repository's
 * resil.config.ts (its three example jobs and their modules), on a tiny one (one job, in a
 * project of its own), and on the repository's with an empty temp directory, so jiti transpiles
 * every module again. Run after `npm run build`: `npm run bench -- cli-cold-start`.
 * With hyperfine installed the usual case is
 * `hyperfine -N -w 3 'node -e 0' 'node bin/resil.js jobs list'` from the repository root.
 *
 * The TypeScript loaders the CLI could use are timed too, each alone: a process that loads the
 * same config through it and exits (cold-start/load-config.mjs): jiti (what the CLI uses), tsx's
 * `tsImport()`, and tsx's `register()` followed by `import()`. Their cost beside one another is
 * what chose the CLI's loader; the CLI adds its own modules to each.
 *
 * Where NODE_EXTRA_CA_CERTS is set, Node reads and parses that certificate file as it starts,
 * before any script: a fixed cost in every process, `node -e 0` included, which makes each ratio
 * smaller. The table is then printed a second time with the variable removed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchOptions } from './harness.ts';

const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const binary = join(repoRoot, 'bin/resil.js');
const loadConfig = join(repoRoot, 'test/bench/cold-start/load-config.mjs');
const repoConfig = join(repoRoot, 'resil.config.ts');

interface Case {
  name: string;
  args: string[];
  /** Run with a fresh, empty temp directory: nothing cached there. */
  uncached?: boolean;
}

/** A project with a one-job resil.config.ts, `resil` linked to this repository as an install would. */
function tinyProject(): string {
  const directory = mkdtempSync(join(tmpdir(), 'resil-bench-tiny-'));
  mkdirSync(join(directory, 'node_modules'));
  symlinkSync(repoRoot, join(directory, 'node_modules/resil'), 'dir');
  writeFileSync(join(directory, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(
    join(directory, 'resil.config.ts'),
    `import { defineConfig } from 'resil';

const schedule: string = '0 2 * * *';
export default defineConfig({ jobs: [{ name: 'tiny', schedule, run: async () => {} }] });
`,
  );
  return join(directory, 'resil.config.ts');
}

function casesFor(tinyConfig: string): Case[] {
  const loaders = ['jiti', 'tsx-import', 'tsx-register'].flatMap((loader) => [
    { name: `${loader} alone, resil.config.ts`, args: [loadConfig, loader, repoConfig] },
    { name: `${loader} alone, tiny config`, args: [loadConfig, loader, tinyConfig] },
  ]);
  return [
    { name: 'node -e 0', args: ['-e', '0'] },
    { name: 'resil --version', args: [binary, '--version'] },
    { name: 'resil jobs list (resil.config.ts)', args: [binary, 'jobs', 'list'] },
    { name: 'resil jobs list (tiny config)', args: [binary, '--config', tinyConfig, 'jobs', 'list'] },
    { name: 'resil jobs list, temp dir empty', args: [binary, 'jobs', 'list'], uncached: true },
    ...loaders,
  ];
}

function timeOnce({ args, uncached }: Case, environment: NodeJS.ProcessEnv): number {
  const temp = uncached ? mkdtempSync(join(tmpdir(), 'resil-bench-')) : undefined;
  try {
    const started = process.hrtime.bigint();
    const result = spawnSync(process.execPath, args, {
      cwd: repoRoot,
      env: { ...environment, REDIS_URL: '', ...(temp === undefined ? {} : { TMPDIR: temp }) },
      stdio: 'ignore',
      timeout: 30_000,
    });
    if (result.status !== 0) throw new Error(`${args.join(' ')} exited ${result.status}`);
    return Number(process.hrtime.bigint() - started) / 1e6;
  } finally {
    if (temp !== undefined) rmSync(temp, { recursive: true, force: true });
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export default async function coldStart(options: BenchOptions): Promise<void> {
  if (!existsSync(join(repoRoot, 'dist/cli/main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before this bench.');
  }
  const tinyConfig = tinyProject();
  const cases = casesFor(tinyConfig);
  const rounds = options.smoke ? 2 : 15;
  const { NODE_EXTRA_CA_CERTS: extraCertificates, ...withoutCertificates } = process.env;
  const environments: Array<[string, NodeJS.ProcessEnv]> = [['', process.env]];
  if (extraCertificates !== undefined) {
    environments.push([', without NODE_EXTRA_CA_CERTS (set here)', withoutCertificates]);
  }
  try {
    for (const [label, environment] of environments) {
      for (const entry of cases) timeOnce(entry, environment); // warm the file cache and the loaders' caches
      const samples = new Map(cases.map((c) => [c.name, [] as number[]]));
      for (let round = 0; round < rounds; round++) {
        for (const entry of cases) samples.get(entry.name)!.push(timeOnce(entry, environment));
      }
      const baseline = median(samples.get(cases[0]!.name)!);
      console.log(`\n## CLI cold start${label}\n`);
      console.log('| command | median ms | x node -e 0 |');
      console.log('|---|---:|---:|');
      for (const { name } of cases) {
        const ms = median(samples.get(name)!);
        console.log(`| ${name} | ${ms.toFixed(0)} | ${(ms / baseline).toFixed(2)} |`);
      }
    }
  } finally {
    rmSync(resolve(tinyConfig, '..'), { recursive: true, force: true });
  }
}
