/**
 * The ```ts blocks of README.md and docs/: extracted with their place, for the test that
 * type-checks each one as a module of its own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface Snippet {
  /** `README.md:120`: the file and the line of the block's first code line. */
  readonly where: string;
  readonly file: string;
  readonly line: number;
  readonly code: string;
}

/** README.md and every docs/**\/*.md under `root`. */
export function documentationFiles(root: string): string[] {
  const docs = (readdirSync(join(root, 'docs'), { recursive: true }) as string[])
    .filter((file) => file.endsWith('.md'))
    .map((file) => join(root, 'docs', file));
  return [join(root, 'README.md'), ...docs.sort()];
}

/** The ```ts and ```typescript blocks of `file`, their indentation removed. */
export function snippetsOf(root: string, file: string): Snippet[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const snippets: Snippet[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = /^( *)```(ts|typescript)\s*$/.exec(lines[index]!);
    if (open === null) continue;
    const indent = open[1]!;
    const body: string[] = [];
    let end = index + 1;
    while (end < lines.length && lines[end]!.trimEnd() !== `${indent}\`\`\``) {
      body.push(lines[end]!.startsWith(indent) ? lines[end]!.slice(indent.length) : lines[end]!);
      end++;
    }
    const name = relative(root, file);
    snippets.push({
      where: `${name}:${index + 2}`,
      file: name,
      line: index + 2,
      code: `${body.join('\n')}\n`,
    });
    index = end;
  }
  return snippets;
}
