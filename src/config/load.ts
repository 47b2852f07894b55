import { existsSync, readFileSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { ConfigError, isConfigError } from '../scheduler/config-error.ts';
import type { ResolvedConfig } from '../scheduler/job.ts';
import { discardPreparedBundles, prepareBundle } from './bundle-typescript.ts';
import { configSearchPlaces } from './defaults.ts';
import { importDefault } from './import-module.ts';
import { describeLoadError } from './load-error.ts';

export interface LoadConfigOptions {
  /** Where discovery starts (and `configPath` is resolved from). Defaults to `process.cwd()`. */
  cwd?: string;
  /** A config file to load instead of searching for one (`--config <file>`). */
  configPath?: string;
}

const typeScriptExtensions = new Set(['.ts', '.mts', '.cts', '.tsx']);

/**
 * The config file cosmiconfig will load when `directory` holds one: the first search place there
 * that exists (package.json only with a `resil` key). Its own search starts in the same place.
 */
function firstConfigIn(directory: string): string | undefined {
  for (const place of configSearchPlaces) {
    const path = join(directory, place);
    if (!existsSync(path)) continue;
    if (place !== 'package.json') return path;
    try {
      if ('resil' in (JSON.parse(readFileSync(path, 'utf8')) as object)) return path;
    } catch {
      return path;
    }
  }
  return undefined;
}

async function loadModule(filepath: string): Promise<unknown> {
  try {
    const config = await importDefault(filepath);
    // A config may export a (possibly async) function that builds it.
    return typeof config === 'function' ? await config() : config;
  } catch (error) {
    if (isConfigError(error)) throw error;
    throw new ConfigError(describeLoadError(error, filepath), { cause: error });
  }
}

/**
 * Finds the config (cosmiconfig: `resil.config.ts` / `.js` / `.mjs`, `.resilrc`, `.resilrc.json`,
 * `.resilrc.yaml`, `package.json#resil`, from `cwd` up to the project's root) or loads
 * `configPath`, validates it and applies the defaults.
 *
 * TypeScript configs (and the `./jobs/*.ts` they import) are bundled with esbuild into a temp
 * directory and imported from there (tsx's hooks only for what a bundle cannot do).
 * Throws {@link ConfigError} for every problem: not found, syntax error (with file and line),
 * a module that throws while loading, and each invalid option (all reported at once).
 *
 * @example
 * const config = await loadConfig({ cwd: process.cwd() });
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<ResolvedConfig> {
  const cwd = options.cwd ?? process.cwd();
  const configPath = options.configPath === undefined ? undefined : resolve(cwd, options.configPath);
  // Bundling a TypeScript config takes longer than finding it: start it now when the config to
  // be found is already known.
  const likelyConfig = configPath ?? firstConfigIn(resolve(cwd));
  if (
    likelyConfig !== undefined &&
    typeScriptExtensions.has(extname(likelyConfig)) &&
    existsSync(likelyConfig)
  ) {
    prepareBundle(likelyConfig);
  }
  // Loaded while esbuild works (validation brings croner and the strategies).
  const validation = import('../scheduler/resolve.ts');
  validation.catch(() => {}); // awaited below; no unhandled rejection when the search fails first
  const { cosmiconfig } = await import('cosmiconfig');
  const moduleLoader = (filepath: string) => loadModule(filepath);
  const explorer = cosmiconfig('resil', {
    searchPlaces: [...configSearchPlaces],
    searchStrategy: 'project',
    cache: false,
    loaders: {
      '.js': moduleLoader,
      '.mjs': moduleLoader,
      '.cjs': moduleLoader,
      '.ts': moduleLoader,
      '.mts': moduleLoader,
      '.cts': moduleLoader,
    },
  });

  let result: Awaited<ReturnType<typeof explorer.search>>;
  try {
    if (configPath !== undefined) {
      if (!existsSync(configPath)) {
        throw new ConfigError({ file: configPath, message: 'config file not found (given by --config)' });
      }
      result = await explorer.load(configPath);
    } else {
      result = await explorer.search(cwd);
    }
  } catch (error) {
    if (isConfigError(error)) throw error;
    // cosmiconfig's own JSON and YAML parse errors: keep their first lines, which carry the location.
    throw new ConfigError(describeLoadError(error, configPath ?? cwd), { cause: error });
  } finally {
    await discardPreparedBundles();
  }

  if (result === null) {
    throw new ConfigError({
      file: cwd,
      message: `no resil config found (looked for ${configSearchPlaces.join(', ')} from here up to the project root); create resil.config.ts or pass --config <file>`,
    });
  }
  if (result.isEmpty === true) {
    throw new ConfigError({ file: result.filepath, message: 'the config file is empty' });
  }
  const { resolveConfig } = await validation;
  return resolveConfig(result.config, result.filepath, { importJob: importDefault });
}
