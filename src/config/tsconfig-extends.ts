import { readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';

/**
 * The files a tsconfig.json (or jsconfig.json) extends, directly or through one another, found
 * as esbuild finds them when it bundles (it follows tsc): `extends` is a string or (TypeScript 5)
 * an array; a path is taken from the extending file's real directory, with `.json` added when
 * the file is missing; a package specifier is looked for in each `node_modules` from there up,
 * through the package's `exports` (require conditions) or its package.json `tsconfig` field, else
 * as `<specifier>/tsconfig.json`, `<specifier>` and `<specifier>.json`. Each file is named as it
 * was found (through a package manager's links), so a relinked package reads as other content.
 * A file that is missing or not JSON with comments extends nothing.
 */
export function extendedConfigs(file: string): string[] {
  const found = new Set<string>();
  const visit = (config: string, visiting: ReadonlySet<string>) => {
    const real = realPathOf(config);
    if (real === null || visiting.has(real)) return;
    for (const specifier of extendsOf(config)) {
      const base = resolveExtends(specifier, dirname(real));
      if (base === null) continue;
      found.add(base);
      visit(base, new Set(visiting).add(real));
    }
  };
  visit(file, new Set());
  return [...found];
}

/** `@scope/name/sub` -> `@scope/name` and `/sub`; `name` -> `name` and ``. */
function splitPackageSpecifier(specifier: string): [name: string, subpath: string] {
  const parts = specifier.split('/');
  const length = specifier.startsWith('@') ? 2 : 1;
  const name = parts.slice(0, length).join('/');
  return [name, specifier.slice(name.length)];
}

function isPackageSpecifier(specifier: string): boolean {
  return !(
    isAbsolute(specifier) ||
    specifier.startsWith('./') ||
    specifier.startsWith('../') ||
    specifier === '.' ||
    specifier === '..'
  );
}

function resolveExtends(specifier: string, directory: string): string | null {
  if (isPackageSpecifier(specifier)) return resolvePackageConfig(specifier, directory);
  // tsc reads a bare `.` or `..` as that directory's tsconfig.json (and esbuild follows).
  const path = resolve(
    directory,
    specifier === '.' || specifier === '..' ? `${specifier}/tsconfig.json` : specifier,
  );
  if (isFile(path)) return path;
  return !path.endsWith('.json') && isFile(`${path}.json`) ? `${path}.json` : null;
}

function resolvePackageConfig(specifier: string, directory: string): string | null {
  const [name, subpath] = splitPackageSpecifier(specifier);
  for (let current = directory; ; current = dirname(current)) {
    if (basename(current) !== 'node_modules') {
      const packageDirectory = join(current, 'node_modules', name);
      let base = join(current, 'node_modules', specifier);
      const manifest = readJson(join(packageDirectory, 'package.json'), JSON.parse);
      if (manifest !== null && typeof manifest === 'object') {
        const { tsconfig, exports } = manifest as { tsconfig?: unknown; exports?: unknown };
        if (typeof tsconfig === 'string' && tsconfig !== '') base = resolve(packageDirectory, tsconfig);
        const target = exports === undefined ? null : exportsTarget(exports, `.${subpath}`);
        if (target !== null && isFile(join(packageDirectory, target))) return join(packageDirectory, target);
      }
      for (const candidate of [join(base, 'tsconfig.json'), base, `${base}.json`]) {
        if (isFile(candidate)) return candidate;
      }
    }
    if (dirname(current) === current) return null;
  }
}

/** The conditions esbuild (like tsc) resolves a config package's `exports` with. */
const exportConditions = new Set(['default', 'node', 'require']);

/** What `exports` maps `subpath` (`.` or `./sub`) to, as Node's PACKAGE_EXPORTS_RESOLVE does. */
function exportsTarget(exports: unknown, subpath: string): string | null {
  const isSubpathMap =
    typeof exports === 'object' &&
    exports !== null &&
    !Array.isArray(exports) &&
    Object.keys(exports).some((key) => key.startsWith('.'));
  const map = (isSubpathMap ? exports : { '.': exports }) as Record<string, unknown>;
  if (Object.hasOwn(map, subpath) && !subpath.includes('*')) return targetOf(map[subpath], '');
  let best: string | undefined;
  for (const key of Object.keys(map)) {
    const star = key.indexOf('*');
    if (star === -1 || key.indexOf('*', star + 1) !== -1) continue;
    const matches =
      subpath.length >= key.length &&
      subpath.startsWith(key.slice(0, star)) &&
      subpath.endsWith(key.slice(star + 1));
    // The longest part before the `*` wins, then the longest key.
    const bestStar = best?.indexOf('*') ?? -1;
    if (
      matches &&
      (best === undefined || star > bestStar || (star === bestStar && key.length > best.length))
    ) {
      best = key;
    }
  }
  if (best === undefined) return null;
  const star = best.indexOf('*');
  return targetOf(map[best], subpath.slice(star, subpath.length - (best.length - star - 1)));
}

function targetOf(target: unknown, match: string): string | null {
  if (typeof target === 'string') return target.startsWith('./') ? target.replaceAll('*', match) : null;
  const choices = Array.isArray(target)
    ? target
    : typeof target === 'object' && target !== null
      ? Object.entries(target)
          .filter(([condition]) => exportConditions.has(condition))
          .map(([, value]) => value)
      : [];
  for (const choice of choices) {
    const found = targetOf(choice, match);
    if (found !== null) return found;
  }
  return null;
}

/** The specifiers a config's `extends` names, in order (none when it cannot be read). */
function extendsOf(config: string): string[] {
  const json = readJson(config, parseJsonWithComments);
  const value =
    json !== null && typeof json === 'object' ? (json as { extends?: unknown }).extends : undefined;
  const specifiers = Array.isArray(value) ? value : [value];
  return specifiers.filter((specifier): specifier is string => typeof specifier === 'string');
}

function readJson(file: string, parse: (text: string) => unknown): unknown {
  try {
    return parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/** JSON as tsc reads a tsconfig.json: `//` and `/* *\/` comments and trailing commas allowed. */
export function parseJsonWithComments(text: string): unknown {
  let json = '';
  /** Where in `json` a comma is that no value has followed yet. */
  let comma = -1;
  for (let at = text.charCodeAt(0) === 0xfeff ? 1 : 0; at < text.length; at++) {
    const char = text[at]!;
    if (char === '"') {
      let end = at + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      json += text.slice(at, end + 1);
      comma = -1;
      at = end;
    } else if (char === '/' && text[at + 1] === '/') {
      const end = text.indexOf('\n', at);
      at = end === -1 ? text.length : end - 1;
    } else if (char === '/' && text[at + 1] === '*') {
      const end = text.indexOf('*/', at + 2);
      at = end === -1 ? text.length : end + 1;
      json += ' ';
    } else if ((char === '}' || char === ']') && comma !== -1) {
      json = `${json.slice(0, comma)} ${json.slice(comma + 1)}${char}`;
      comma = -1;
    } else {
      if (char === ',') comma = json.length;
      else if (!/\s/.test(char)) comma = -1;
      json += char;
    }
  }
  return JSON.parse(json);
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    // Missing, or under a file (ENOTDIR: `base.json/tsconfig.json`).
    return false;
  }
}

export function realPathOf(path: string): string | null {
  try {
    return realpathSync.native(path);
  } catch {
    return null;
  }
}
