/**
 * A stack trace mapped through dist's source maps (resil's config loader turns source maps on)
 * names src/ files: the package ships them, and every map carries its sources too.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, repoRoot } from '../cli/run-process.ts';

describe('dist source maps', () => {
  beforeAll(() => ensureBuilt(), 200_000);

  it('every .js.map has sourcesContent for each of its sources', () => {
    const maps = (readdirSync(join(repoRoot, 'dist'), { recursive: true }) as string[]).filter((file) =>
      file.endsWith('.js.map'),
    );
    const scripts = (readdirSync(join(repoRoot, 'dist'), { recursive: true }) as string[]).filter((file) =>
      file.endsWith('.js'),
    );
    // Every file that points at a map has it (a facade that only re-exports a chunk, and the
    // bundler's own helpers, point at none: a stack trace shows them as they are in dist/).
    const pointing = scripts.filter((file) =>
      readFileSync(join(repoRoot, 'dist', file), 'utf8').includes('//# sourceMappingURL='),
    );
    expect(maps.sort()).toEqual(pointing.map((file) => `${file}.map`).sort());
    expect(pointing).toContain('cli/main.js');
    expect(maps.length).toBeGreaterThan(7);

    const without = maps.filter((file) => {
      const map = JSON.parse(readFileSync(join(repoRoot, 'dist', file), 'utf8')) as {
        sources: string[];
        sourcesContent?: Array<string | null>;
      };
      return (
        map.sourcesContent?.length !== map.sources.length ||
        map.sourcesContent.some((content) => typeof content !== 'string' || content.length === 0)
      );
    });
    expect(without).toEqual([]);
  });

  it('every resil source a map names is a file the package ships, so a stack trace from an installed package points at a file that exists', () => {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
        cwd: repoRoot,
        encoding: 'utf8',
      }),
    ) as Array<{ files: Array<{ path: string }> }>;
    const shipped = new Set(packed[0]!.files.map((file) => file.path));
    const maps = [...shipped].filter((file) => file.startsWith('dist/') && file.endsWith('.js.map'));
    const missing = new Set<string>();
    let named = 0;
    for (const file of maps) {
      const { sources } = JSON.parse(readFileSync(join(repoRoot, file), 'utf8')) as { sources: string[] };
      for (const source of sources) {
        const path = relative(repoRoot, resolve(repoRoot, dirname(file), source));
        // Third-party code bundled into dist/ (commander, ...) is not resil's to ship.
        if (!path.startsWith('src/')) continue;
        named++;
        if (!shipped.has(path)) missing.add(path);
      }
    }
    expect(named).toBeGreaterThan(100);
    expect([...missing]).toEqual([]);
  });
});
