import { existsSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';

const scopeOfDirectory = new Map<string, boolean>();

/** True when `.ts` / `.js` files in `directory` are CommonJS: the nearest package.json lacks `"type": "module"`. */
function isCommonJsDirectory(directory: string): boolean {
  const known = scopeOfDirectory.get(directory);
  if (known !== undefined) return known;
  const manifest = join(directory, 'package.json');
  let commonJs: boolean;
  if (existsSync(manifest)) {
    try {
      commonJs = (JSON.parse(readFileSync(manifest, 'utf8')) as { type?: unknown }).type !== 'module';
    } catch {
      commonJs = true;
    }
  } else {
    commonJs = dirname(directory) === directory ? true : isCommonJsDirectory(dirname(directory));
  }
  scopeOfDirectory.set(directory, commonJs);
  return commonJs;
}

/** True when Node (and tsx) run `file` as CommonJS: `.cjs` / `.cts`, or a package without `"type": "module"`. */
export function isCommonJsModule(file: string): boolean {
  const extension = extname(file);
  if (extension === '.cjs' || extension === '.cts') return true;
  if (extension === '.mjs' || extension === '.mts') return false;
  return isCommonJsDirectory(dirname(file));
}
