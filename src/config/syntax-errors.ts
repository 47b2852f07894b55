import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type { BuildFailure } from 'esbuild';
import type { ConfigProblem } from '../scheduler/config-error.ts';

/**
 * Every syntax error in `file` and in the project files it imports, each at its
 * `file:line:column` (1-based), or none when they all parse. Neither Node nor jiti says where a
 * syntax error is in every case, nor finds more than the first: esbuild parses the whole graph
 * (packages left out) and reports them all. Asked only after a module failed to load.
 */
export async function syntaxErrorsIn(file: string): Promise<ConfigProblem[]> {
  // require(): esbuild is CommonJS, and import() would first scan its large main file for exports.
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const directory = dirname(file);
  try {
    await esbuild.build({
      entryPoints: [file],
      absWorkingDir: directory,
      bundle: true,
      packages: 'external',
      write: false,
      platform: 'node',
      format: 'esm',
      logLevel: 'silent',
    });
    return [];
  } catch (error) {
    const { errors = [] } = error as Partial<BuildFailure>;
    // An import that does not resolve is the loader's to report, as Node words it.
    return errors.flatMap(({ text, location }) =>
      location === null || text.startsWith('Could not resolve')
        ? []
        : [
            {
              file: `${resolve(directory, location.file)}:${location.line}:${location.column + 1}`,
              message: `syntax error: ${text}`,
            },
          ],
    );
  } finally {
    await esbuild.stop();
  }
}
