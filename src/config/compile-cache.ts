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
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Bundle } from './bundle.ts';

/**
 * Compiled configs, kept in the OS temp directory (never beside the config, so a read-only
 * project works) and keyed by the entry file, the bundler (its source and esbuild's version) and
 * Node's version. A later start imports the cached bundle without loading esbuild while every
 * file it was built from has the content it was built from. One file per entry: the bundle, then
 * a last line listing what it was built from.
 */

/** Changes whenever what an entry holds changes, so older entries are rebuilt. */
const cacheFormat = 1;
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

interface Manifest {
  /** Each inlined file, and the package.json / tsconfig.json nearest to each. */
  readonly inputs: Record<string, FileVersion>;
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
  const bundler = fileURLToPath(
    new URL(`./bundle${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
  );
  const esbuild = createRequire(import.meta.url)('esbuild/package.json') as { version: string };
  identity = `${cacheFormat}\0${hashOf(bundler)}\0${esbuild.version}\0${process.version}`;
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

const nearestByDirectory = new Map<string, string | null>();

/** The file called `name` in `directory` or the closest directory above it, memoised per directory. */
function nearest(name: string, directory: string): string | null {
  const key = join(directory, name);
  let found = nearestByDirectory.get(key);
  if (found === undefined) {
    const parent = dirname(directory);
    found = existsSync(key) ? key : parent === directory ? null : nearest(name, parent);
    nearestByDirectory.set(key, found);
  }
  return found;
}

/** The package.json and tsconfig.json nearest to `file`: its module type, imports and `paths`. */
function settingsOf(file: string): string[] {
  const directory = dirname(file);
  return [nearest('package.json', directory), nearest('tsconfig.json', directory)].filter(
    (found): found is string => found !== null,
  );
}

/** {@link FileVersion.stat}: take it before reading the file. */
export function statOf(file: string): string | null {
  const stats = statSync(file, { bigint: true, throwIfNoEntry: false });
  return stats === undefined ? null : `${stats.size}:${stats.ino}:${stats.mtimeNs}:${stats.ctimeNs}`;
}

function manifestOf(bundle: Bundle): Manifest {
  const inputs: Record<string, FileVersion> = { ...bundle.inputs };
  // esbuild reads these itself: seen now, after the build (a change during it goes unnoticed).
  for (const file of Object.keys(bundle.inputs).flatMap(settingsOf)) {
    inputs[file] ??= { stat: statOf(file), sha256: hashOf(file) };
  }
  return { inputs, externals: bundle.externals };
}

function isCurrent(manifest: Manifest): boolean {
  for (const [file, input] of Object.entries(manifest.inputs)) {
    if (statOf(file) !== input.stat && hashOf(file) !== input.sha256) return false;
    if (!settingsOf(file).every((settings) => settings in manifest.inputs)) return false;
  }
  return manifest.externals.every((file) => existsSync(file));
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

/** Entries older than this are removed when another is written (one in use is simply rebuilt). */
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
