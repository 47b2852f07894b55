import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, isConfigError } from '../scheduler/config-error.ts';
import type { ResolvedConfig } from '../scheduler/job.ts';
import { resolveConfig } from '../scheduler/resolve.ts';
import { configSearchPlaces } from './defaults.ts';
import { importDefault } from './import-module.ts';
import { describeLoadError } from './load-error.ts';

export interface LoadConfigOptions {
  /** Where discovery starts (and `configPath` is resolved from). Defaults to `process.cwd()`. */
  cwd?: string;
  /** A config file to load instead of searching for one (`--config <file>`). */
  configPath?: string;
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
 * TypeScript configs and job modules are loaded by jiti, which keeps what it transpiles in a
 * cache of its own (see import-module.ts).
 * Throws {@link ConfigError} for every problem: not found, syntax error (with file and line),
 * a module that throws while loading, and each invalid option (all reported at once).
 *
 * @example
 * const config = await loadConfig({ cwd: process.cwd() });
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<ResolvedConfig> {
  const cwd = options.cwd ?? process.cwd();
  const configPath = options.configPath === undefined ? undefined : resolve(cwd, options.configPath);
  const { cosmiconfig } = await import('cosmiconfig');
  const explorer = cosmiconfig('resil', {
    searchPlaces: [...configSearchPlaces],
    searchStrategy: 'project',
    cache: false,
    loaders: Object.fromEntries(
      ['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts'].map((ext) => [ext, loadModule]),
    ),
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
  return resolveConfig(result.config, result.filepath, { importJob: importDefault });
}
