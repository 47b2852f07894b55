/**
 * Every relative link of README.md and docs/ points at a file of the repository, and every
 * `#anchor` at a heading of its page (GitHub's anchors: lower case, punctuation dropped, spaces
 * to hyphens).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../cli/run-process.ts';
import { documentationFiles } from './snippets.ts';

/** The lines of `text` outside fenced code blocks. */
function prose(text: string): string[] {
  let fenced = false;
  return text.split('\n').filter((line) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    return !fenced && !/^\s*```/.test(line);
  });
}

function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  for (const line of prose(readFileSync(file, 'utf8'))) {
    const heading = /^#{1,6} (.+)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    anchors.add(
      heading
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}_\- ]/gu, '')
        .replaceAll(' ', '-'),
    );
  }
  return anchors;
}

describe('documentation links', () => {
  it('every relative link and anchor of README.md and docs/ resolves', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of documentationFiles(repoRoot)) {
      const lines = prose(readFileSync(file, 'utf8'));
      for (const line of lines) {
        // Inline code spans are not links.
        for (const [, target] of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
          if (/^[a-z]+:/.test(target!)) continue;
          checked++;
          const [path, anchor] = target!.split('#') as [string, string | undefined];
          const linked = path === '' ? file : join(dirname(file), path);
          const where = `${relative(repoRoot, file)}: ${target}`;
          if (!existsSync(linked)) broken.push(`${where} (no such file)`);
          else if (anchor !== undefined && linked.endsWith('.md') && !anchorsOf(linked).has(anchor))
            broken.push(`${where} (no such heading)`);
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });
});
