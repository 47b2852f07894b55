/**
 * The package.json that `npm pack` / `npm publish` ship: without `scripts` (their `prepare`
 * builds dist/ in a clone of this repository, and npm 11 warns about it on every consumer's
 * install) and without `allowScripts` (this repository's own install policy).
 *
 * `node --import tsx scripts/pack-manifest.ts strip` (prepack, after `npm run build`: npm reads
 * package.json again after prepack and would find no `prepare` to build dist/ with) writes it over
 * package.json and keeps the original as package.json.orig; `... restore` (postpack) puts the
 * original back. A pack stopped between the two leaves package.json.orig: `restore` mends it.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function publishedManifest(manifest: Record<string, unknown>): Record<string, unknown> {
  const { scripts: _scripts, allowScripts: _allowScripts, ...published } = manifest;
  return published;
}

const root = fileURLToPath(new URL('..', import.meta.url));
const manifestPath = `${root}package.json`;
const originalPath = `${root}package.json.orig`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const command = process.argv[2];
  if (command === 'strip') {
    if (existsSync(originalPath)) throw new Error(`${originalPath} exists: run "restore" first`);
    const text = readFileSync(manifestPath, 'utf8');
    writeFileSync(originalPath, text);
    writeFileSync(manifestPath, `${JSON.stringify(publishedManifest(JSON.parse(text)), null, 2)}\n`);
  } else if (command === 'restore') {
    if (existsSync(originalPath)) renameSync(originalPath, manifestPath);
  } else {
    console.error('usage: node --import tsx scripts/pack-manifest.ts strip|restore');
    process.exitCode = 2;
  }
}
