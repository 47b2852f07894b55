/**
 * The package ships dist/ only: a stack trace mapped through dist's source maps (resil's config
 * loader turns source maps on) must not depend on src/, so every map carries its sources.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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
});
