/**
 * dist/ bundles commander and cosmiconfig (scripts/build.ts), which are only devDependencies: every
 * package that dist/ still imports or requires must be one a consumer gets, a dependency or a
 * peer, or a Node built-in.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundledPackages, packageNameOf } from '../../scripts/build.ts';
import { ensureBuilt, repoRoot } from '../cli/run-process.ts';

describe('the packages dist/ imports', () => {
  beforeAll(() => ensureBuilt(), 200_000);

  it('are all dependencies, peers or built-ins, and none of the bundled ones', () => {
    const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
    };
    const available = new Set([
      ...Object.keys(manifest.dependencies),
      ...Object.keys(manifest.peerDependencies),
    ]);
    const imported = new Set<string>();
    const files = (readdirSync(join(repoRoot, 'dist'), { recursive: true }) as string[]).filter((file) =>
      file.endsWith('.js'),
    );
    for (const file of files) {
      const code = readFileSync(join(repoRoot, 'dist', file), 'utf8');
      for (const match of code.matchAll(/(?:\bfrom |\bimport\(|\brequire\()\s*"([^".][^"]*)"/g)) {
        imported.add(match[1]!);
      }
    }
    const packages = [...imported]
      .filter((specifier) => !isBuiltin(specifier))
      .map((specifier) => packageNameOf(specifier)!);
    expect(packages).toContain('croner');
    expect(packages.filter((name) => !available.has(name))).toEqual([]);
    expect(packages.filter((name) => bundledPackages.includes(name))).toEqual([]);
  });
});
