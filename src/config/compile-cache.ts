import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, isAbsolute, join, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Bundle } from './bundle.ts';
import { extendedConfigs, realPathOf } from './tsconfig-extends.ts';

/**
 * Compiled configs, kept in the OS temp directory (never beside the config, so a read-only
 * project works) and keyed by the entry file, the bundler (its files as written, and esbuild's
 * version) and Node's version. A later start imports the cached bundle without loading esbuild while every
 * file it was built from has the content it was built from and every package it imports is
 * found where it was. One file per entry: the bundle, then a last line listing what it was built
 * from.
 */

/** Changes whenever what an entry holds changes, so older entries are rebuilt. */
const cacheFormat = 2;
const manifestMarker = '\n//# resil-compile-cache ';

/** A file a bundle was built from, as it was read: its content's sha256 (null: absent) and its stat. */
export interface FileVersion {
  readonly sha256: string | null;
  /**
   * Size, inode, modification and change times, taken before the file was read: while they stay
   * the same, so does the content (as git's index assumes: a write always moves the change time).
   * When they do not, the content tells.
   */
  readonly stat: string | null;
}

/**
 * Where Node finds the package a bare import names, for a module in `from`: the first
 * `node_modules/<name>` directory from there up. The bundle imports what Node found there by its
 * real path, which is what Node would still find while this directory, its real path (pnpm links
 * `node_modules/<name>` into `.pnpm/<name>@<version>...` and relinks it on upgrade, leaving the
 * old one in place) and its package.json (`exports`, `main`) stay the same.
 */
export interface PackageLookup {
  /** The package's name, `@scope/name` or `name`. */
  readonly name: string;
  /** The importing module's directory. */
  readonly from: string;
  /** The directory found (null: none), as found: through its links. */
  readonly directory: string | null;
  /** That directory's real path, the one the bundle imports from. */
  readonly realDirectory: string | null;
  /** Its package.json as it was before esbuild read it. */
  readonly packageJson: FileVersion | null;
}

interface Manifest {
  /** Each inlined file. */
  readonly inputs: Record<string, FileVersion>;
  /** What esbuild read besides: the settings of each inlined file (see {@link settingsOf}). */
  readonly settings: Record<string, FileVersion>;
  /** The packages the bundle imports, by where they were found. */
  readonly packages: readonly PackageLookup[];
  /** Files the bundle imports by absolute URL: they must still be there. */
  readonly externals: readonly string[];
}

export function sha256(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

/** Where this user's cache directory is (see {@link cacheDirectory}). */
function cachePath(): string {
  return join(tmpdir(), `resil-compile-cache-${process.getuid?.() ?? 'user'}`);
}

let directory: string | null | undefined;

/**
 * This user's cache directory, created private (0700); null when it cannot be, or when what is
 * there is not a directory of this user's that only they can write (another user's bundle would
 * run as this one).
 */
function cacheDirectory(): string | null {
  if (directory !== undefined) return directory;
  const uid = process.getuid?.();
  const path = cachePath();
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    const stats = lstatSync(path);
    const own = uid === undefined || stats.uid === uid;
    directory = stats.isDirectory() && own && (stats.mode & 0o022) === 0 ? path : null;
  } catch {
    directory = null;
  }
  return directory;
}

/** True for a file in the compile cache: frames there are the bundle's helpers, not the user's code. */
export function isInCompileCache(file: string): boolean {
  return file.startsWith(`${cachePath()}${sep}`);
}

let identity: string | undefined;

/** What the bundle depends on besides its inputs: how it was built, and for which Node. */
function bundlerIdentity(): string {
  if (identity !== undefined) return identity;
  // The file this code is in (in dist/, a chunk that holds the bundler too) and, running from
  // the sources, the bundler's own file and the one that writes the entry of job modules bundled
  // together, beside it: by their stat, as a build or an install writes them anew (reading and
  // hashing a 200 kB chunk cost about 1 ms of every start).
  const own = fileURLToPath(import.meta.url);
  const bundler = join(dirname(own), `bundle${extname(own)}`);
  const importer = join(dirname(own), `import-module${extname(own)}`);
  // Resolved as ESM and read: no CommonJS resolution for one field (about 1 ms).
  const esbuild = JSON.parse(
    readFileSync(fileURLToPath(import.meta.resolve('esbuild/package.json')), 'utf8'),
  ) as {
    version: string;
  };
  identity = [
    cacheFormat,
    statOf(own),
    statOf(bundler),
    statOf(importer),
    esbuild.version,
    process.version,
  ].join('\0');
  return identity;
}

function entryPath(file: string): string | null {
  const path = cacheDirectory();
  if (path === null) return null;
  const key = sha256(`${bundlerIdentity()}\0${file}`).slice(0, 24);
  return join(path, `${basename(file)}-${key}.mjs`);
}

function hashOf(file: string): string | null {
  try {
    return sha256(readFileSync(file));
  } catch {
    return null;
  }
}

function versionOf(file: string): FileVersion {
  const stat = statOf(file); // before the read, see FileVersion.stat
  return { stat, sha256: hashOf(file) };
}

/** True while `file` has the content it had when `version` was taken. */
function isUnchanged(file: string, version: FileVersion): boolean {
  return statOf(file) === version.stat || hashOf(file) === version.sha256;
}

const nearestByDirectory = new Map<string, string | null>();

/**
 * The first file of `names` (in that order) in `directory` or the closest directory above it
 * that has one, memoised per directory.
 */
function nearest(names: readonly string[], directory: string): string | null {
  const key = `${directory}\0${names.join('\0')}`;
  let found = nearestByDirectory.get(key);
  if (found === undefined) {
    const parent = dirname(directory);
    found =
      names.map((name) => join(directory, name)).find((path) => existsSync(path)) ??
      (parent === directory ? null : nearest(names, parent));
    nearestByDirectory.set(key, found);
  }
  return found;
}

/** The package.json that governs `file` (its nearest, from its directory up), or null. */
export function packageJsonOf(file: string): string | null {
  return nearest(['package.json'], dirname(file));
}

const configNames = ['tsconfig.json', 'jsconfig.json'];
const extendedByConfig = new Map<string, readonly string[]>();

/**
 * The settings esbuild reads for `file`: the nearest package.json (module type, `imports`), the
 * nearest tsconfig.json, or jsconfig.json where a directory has none (`paths`, JSX, class
 * fields), and every file that one extends.
 */
function settingsOf(file: string): string[] {
  const directory = dirname(file);
  const config = nearest(configNames, directory);
  let extended: readonly string[] = [];
  if (config !== null) {
    extended = extendedByConfig.get(config) ?? extendedConfigs(config);
    extendedByConfig.set(config, extended);
  }
  return [packageJsonOf(file), config, ...extended].filter((found): found is string => found !== null);
}

/** The package a bare specifier names (`@scope/name/sub` -> `@scope/name`), or null for any other. */
export function packageNameOf(specifier: string): string | null {
  if (/^(?:[./#]|[a-z][a-z\d+.-]*:)/i.test(specifier) || isAbsolute(specifier)) return null;
  const parts = specifier.split('/');
  if (!specifier.startsWith('@')) return parts[0]!;
  return parts.length > 1 ? `${parts[0]}/${parts[1]}` : null;
}

const directoryByPath = new Map<string, boolean>();

function isDirectory(path: string): boolean {
  let found = directoryByPath.get(path);
  if (found === undefined) {
    try {
      found = statSync(path).isDirectory();
    } catch {
      found = false;
    }
    directoryByPath.set(path, found);
  }
  return found;
}

/** Node's lookup of a package directory (PACKAGE_RESOLVE): `node_modules/<name>` from `from` up. */
function packageDirectory(name: string, from: string): string | null {
  for (let directory = from; ; directory = dirname(directory)) {
    const candidate = join(directory, 'node_modules', name);
    if (isDirectory(candidate)) return candidate;
    if (dirname(directory) === directory) return null;
  }
}

/** Where package `name` is for a module in `from` (take it before resolving the import). */
export function lookUpPackage(name: string, from: string): PackageLookup {
  const directory = packageDirectory(name, from);
  return {
    name,
    from,
    directory,
    realDirectory: directory === null ? null : realPathOf(directory),
    packageJson: directory === null ? null : versionOf(join(directory, 'package.json')),
  };
}

/** True while `lookup` finds the same package as when it was recorded. */
function isFoundAgain(lookup: PackageLookup): boolean {
  const directory = packageDirectory(lookup.name, lookup.from);
  if (directory !== lookup.directory) return false;
  return (
    directory === null ||
    (realPathOf(directory) === lookup.realDirectory &&
      lookup.packageJson !== null &&
      isUnchanged(join(directory, 'package.json'), lookup.packageJson))
  );
}

/** {@link FileVersion.stat}: take it before reading the file. */
export function statOf(file: string): string | null {
  const stats = statSync(file, { bigint: true, throwIfNoEntry: false });
  return stats === undefined ? null : `${stats.size}:${stats.ino}:${stats.mtimeNs}:${stats.ctimeNs}`;
}

function manifestOf(bundle: Bundle): Manifest {
  const settings: Record<string, FileVersion> = {};
  // esbuild reads these itself: seen now, after the build (a change during it goes unnoticed).
  for (const file of Object.keys(bundle.inputs).flatMap(settingsOf)) settings[file] ??= versionOf(file);
  return { inputs: bundle.inputs, settings, packages: bundle.packages, externals: bundle.externals };
}

/**
 * True while the bundle is what esbuild would build now: each file it read has the same content,
 * the settings of each inlined file are still those files (a tsconfig.json may now extend
 * another), each package it imports is found where it was, and each file it imports is there.
 */
function isCurrent(manifest: Manifest): boolean {
  for (const [file, version] of Object.entries(manifest.inputs)) {
    if (!isUnchanged(file, version)) return false;
    if (!settingsOf(file).every((settings) => settings in manifest.settings)) return false;
  }
  return (
    Object.entries(manifest.settings).every(([file, version]) => isUnchanged(file, version)) &&
    manifest.packages.every(isFoundAgain) &&
    manifest.externals.every((file) => existsSync(file))
  );
}

/** The URL of `file`'s cached bundle when it is current, else undefined. */
export function cachedBundleUrl(file: string): string | undefined {
  const path = entryPath(file);
  if (path === null) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const at = text.lastIndexOf(manifestMarker);
  if (at === -1) return undefined;
  try {
    return isCurrent(JSON.parse(text.slice(at + manifestMarker.length)) as Manifest)
      ? pathToFileURL(path).href
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Entries older than this are removed when another is written (a start that finds its entry
 * gone between checking and importing it builds it again).
 */
const entryLifetimeMs = 7 * 24 * 60 * 60 * 1000;

/** Removes the entries (and any half-written file) not written for {@link entryLifetimeMs}. */
function pruneEntries(directory: string): void {
  const before = Date.now() - entryLifetimeMs;
  for (const name of readdirSync(directory)) {
    const path = join(directory, name);
    if ((statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? before) < before) {
      rmSync(path, { force: true });
    }
  }
}

/**
 * Writes `bundle` as `file`'s cache entry (whole or not at all: another process may be reading
 * it) and returns its URL; undefined when there is no usable cache directory.
 */
export function storeBundle(file: string, bundle: Bundle): string | undefined {
  const path = entryPath(file);
  if (path === null) return undefined;
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    pruneEntries(dirname(path));
    writeFileSync(temporary, `${bundle.code}${manifestMarker}${JSON.stringify(manifestOf(bundle))}\n`, {
      mode: 0o600,
    });
    renameSync(temporary, path);
    return pathToFileURL(path).href;
  } catch {
    rmSync(temporary, { force: true });
    return undefined;
  }
}
