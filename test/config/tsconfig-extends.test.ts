import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { extendedConfigs, parseJsonWithComments } from '../../src/config/tsconfig-extends.ts';

const directories: string[] = [];

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A temp directory holding `files` (objects written as JSON); returns it. */
function tree(files: Record<string, string | object>): string {
  const root = mkdtempSync(join(tmpdir(), 'resil-tsconfig-'));
  directories.push(root);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return root;
}

/** The files `tsconfig.json` in `root` extends, relative to `root`. */
function extendedIn(root: string, config = 'tsconfig.json'): string[] {
  return extendedConfigs(join(root, config)).map((file) => file.slice(root.length + 1));
}

describe('parseJsonWithComments', () => {
  it.each([
    ['plain JSON', '{"a": [1, 2]}', { a: [1, 2] }],
    ['line and block comments', '// top\n{ /* a */ "a": 1 // end\n}', { a: 1 }],
    [
      'comment markers inside strings',
      '{"paths": {"@/*": ["./src/*"]}, "url": "http://x"}',
      {
        paths: { '@/*': ['./src/*'] },
        url: 'http://x',
      },
    ],
    ['escaped quotes', '{"a": "say \\"hi\\" // not a comment"}', { a: 'say "hi" // not a comment' }],
    ['trailing commas, also before a comment', '{"a": [1, 2,], "b": 3, /* c */ }', { a: [1, 2], b: 3 }],
    ['a byte order mark', '\uFEFF{"a": 1}', { a: 1 }],
  ])('%s', (_label, text, expected) => {
    expect(parseJsonWithComments(text)).toEqual(expected);
  });

  it('throws for what is not JSON even so', () => {
    expect(() => parseJsonWithComments('{"a": }')).toThrow(SyntaxError);
  });
});

describe('extendedConfigs', () => {
  it('follows relative paths, adding .json only when the file is missing, and chains', () => {
    const root = tree({
      'tsconfig.json': { extends: './config/base' },
      'config/base.json': '{ "extends": "../shared", } // with comments',
      'shared.json': { extends: ['.', './config/base.json'] },
      'config/tsconfig.json': {},
    });
    // `.` is `./tsconfig.json` there; a file visited again (a cycle) is not followed twice.
    expect(extendedIn(root)).toEqual(['config/base.json', 'shared.json', 'tsconfig.json']);
  });

  it('prefers the file as named to the one with .json added, and skips a directory of that name', () => {
    expect(extendedIn(tree({ 'tsconfig.json': { extends: './base' }, base: {}, 'base.json': {} }))).toEqual([
      'base',
    ]);
    expect(
      extendedIn(tree({ 'tsconfig.json': { extends: './base' }, 'base/x.json': {}, 'base.json': {} })),
    ).toEqual(['base.json']);
  });

  it('finds packages from the nearest node_modules up, as esbuild does', () => {
    const root = tree({
      'app/tsconfig.json': {
        extends: ['@acme/base', 'shared/strict', 'with-field', 'exported/node', 'patterned/configs/lib'],
      },
      'node_modules/@acme/base/tsconfig.json': {},
      'app/node_modules/shared/strict.json': {},
      'node_modules/shared/strict.json': {},
      'node_modules/with-field/package.json': { tsconfig: './configs/main.json' },
      'node_modules/with-field/configs/main.json': {},
      'node_modules/exported/package.json': {
        exports: { './node': [{ import: './wrong.json', require: './node20.json' }] },
      },
      'node_modules/exported/node20.json': {},
      'node_modules/exported/wrong.json': {},
      // The longest match before the `*` wins; without `exports`, `configs/lib.json` would.
      'node_modules/patterned/package.json': {
        exports: { './*': './all/*.json', './configs/*': './dist/*.json' },
      },
      'node_modules/patterned/all/configs/lib.json': {},
      'node_modules/patterned/configs/lib.json': {},
      'node_modules/patterned/dist/lib.json': {},
    });
    expect(extendedIn(root, 'app/tsconfig.json')).toEqual([
      'node_modules/@acme/base/tsconfig.json',
      'app/node_modules/shared/strict.json',
      'node_modules/with-field/configs/main.json',
      'node_modules/exported/node20.json',
      'node_modules/patterned/dist/lib.json',
    ]);
  });

  it('names a linked package by its link, and resolves what it extends from where it really is', () => {
    const root = tree({
      'tsconfig.json': { extends: '@acme/strict' },
      'node_modules/.pnpm/@acme+strict@1/node_modules/@acme/strict/tsconfig.json': { extends: '@acme/base' },
      'node_modules/.pnpm/@acme+strict@1/node_modules/@acme/base/tsconfig.json': {},
    });
    mkdirSync(join(root, 'node_modules/@acme'));
    symlinkSync('../.pnpm/@acme+strict@1/node_modules/@acme/strict', join(root, 'node_modules/@acme/strict'));
    expect(extendedIn(root)).toEqual([
      'node_modules/@acme/strict/tsconfig.json',
      'node_modules/.pnpm/@acme+strict@1/node_modules/@acme/base/tsconfig.json',
    ]);
  });

  it('extends nothing when the config is missing, not JSON, or names what is not there', () => {
    const root = tree({
      'broken.json': '{ "extends": "./a.json" ',
      'missing.json': { extends: ['./nowhere', 'no-such-package', 42] },
    });
    expect(extendedIn(root, 'absent.json')).toEqual([]);
    expect(extendedIn(root, 'broken.json')).toEqual([]);
    expect(extendedIn(root, 'missing.json')).toEqual([]);
  });
});
