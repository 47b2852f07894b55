import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type AllowedBackArrow, checkImports } from '../../scripts/check-imports.ts';

const script = fileURLToPath(new URL('../../scripts/check-imports.ts', import.meta.url));
const roots: string[] = [];

/** A throwaway repository holding `files` (path -> source). */
function repository(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'resil-imports-'));
  roots.push(root);
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), source);
  }
  return root;
}

function runCheck(root: string) {
  return spawnSync(process.execPath, ['--import', 'tsx', script, root], { encoding: 'utf8' });
}

const layered = {
  'src/cli/main.ts': "import { loadConfig } from '../config/load.ts';\n",
  'src/config/load.ts': "import { JobRunner } from '../scheduler/runner.ts';\nexport const loadConfig = 1;\n",
  'src/scheduler/runner.ts':
    "import type { ResolvedJob } from './job.ts';\nimport { delay } from '../pipeline/time.ts';\n",
  'src/scheduler/job.ts': 'export interface ResolvedJob {}\n',
  'src/pipeline/time.ts': 'export const delay = 1;\n',
  'src/strategies/retry.ts': "import { delay } from '../pipeline/time.ts';\nexport const retry = delay;\n",
};

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe('scripts/check-imports.ts', () => {
  it('passes imports that follow cli -> config -> scheduler -> library', () => {
    const root = repository(layered);
    expect(checkImports(root)).toEqual({ violations: [], allowed: [], stale: [] });
    const result = runCheck(root);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain(
      'imports follow cli -> entry points -> config -> integrations -> scheduler -> library -> strategies -> pipeline',
    );
  });

  const jobModelInConfig: AllowedBackArrow = {
    from: 'src/scheduler/',
    to: 'src/config/types.ts',
    why: 'the job model moves to src/scheduler',
  };

  it('lets an allow-listed back-arrow pass and reports it; an entry nothing needs is stale', () => {
    const root = repository({
      ...layered,
      'src/config/types.ts': 'export interface ResolvedJob {}\n',
      'src/scheduler/fire.ts': "import type { ResolvedJob } from '../config/types.ts';\n",
    });
    expect(checkImports(root, [jobModelInConfig])).toEqual({
      violations: [],
      allowed: [
        {
          from: 'src/scheduler/fire.ts',
          to: 'src/config/types.ts',
          specifier: '../config/types.ts',
          line: 1,
        },
      ],
      stale: [],
    });
    // The same entry once the arrow is gone.
    expect(checkImports(repository(layered), [jobModelInConfig]).stale).toEqual([jobModelInConfig]);
  });

  it.each([
    ['a static import', 'src/pipeline/time.ts', "import { x } from '../scheduler/runner.ts';\n"],
    [
      'a pipeline file importing a strategy',
      'src/pipeline/pipeline.ts',
      "import '../strategies/retry.ts';\n",
    ],
    ['a strategy importing a store', 'src/strategies/lock.ts', "import '../stores/redis.ts';\n"],
    ['a type import', 'src/strategies/retry.ts', "import type { X } from '../cli/main.ts';\n"],
    ['a side-effect import', 'src/stores/redis.ts', "import '../config/load.ts';\n"],
    ['a re-export', 'src/testing/index.ts', "export * from '../scheduler/runner.ts';\n"],
    ['a dynamic import', 'src/scheduler/fire.ts', "export const load = () => import('../cli/main.ts');\n"],
    ['config importing the cli', 'src/config/validate.ts', "\n\nimport '../cli/main.ts';\n"],
    ['a strategy importing the run ledger', 'src/strategies/lock.ts', "import '../ledger/contract.ts';\n"],
    ['a store importing the scheduler', 'src/stores/redis.ts', "import '../scheduler/runner.ts';\n"],
    [
      'a scheduler file importing a config file no entry names',
      'src/scheduler/fire.ts',
      "import '../config/load.ts';\n",
    ],
  ])('finds a back-arrow: %s', (_, file, source) => {
    const root = repository({ ...layered, [file]: source });
    const { violations } = checkImports(root, [jobModelInConfig]);
    expect(violations).toHaveLength(1);
    expect(violations[0]!.from).toBe(file);
  });

  it('exits 1 on a back-arrow and names the file, the line and both layers', () => {
    const root = repository({ ...layered, 'src/stores/redis.ts': "\nimport '../config/load.ts';\n" });
    const result = runCheck(root);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'import against the layers: src/stores/redis.ts:2 (library) imports src/config/load.ts (config)',
    );
  });
});
