import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createPathsMatcher, getTsconfig } from 'get-tsconfig';

/**
 * The `compilerOptions.paths` of the tsconfig.json that governs `directory` (get-tsconfig finds it
 * and follows its `extends`), as jiti's prefix aliases: `"@lib/*": ["./lib/*"]` becomes `@lib` ->
 * `/project/lib`, `"shared": ["./src/shared.ts"]` becomes `shared` -> `/project/src/shared.ts`.
 * Each pattern's first target counts; a `*` anywhere but at the end has no alias.
 *
 * The project's own package name keeps its self-reference where Node has one (an `exports` that
 * does not tell `import` from `require` apart): the config then loads the same copy of the
 * package as the command does (in resil's repository, resil from dist/, not its sources).
 */
export function tsconfigPathAliases(directory: string): Record<string, string> {
  const tsconfig = getTsconfig(directory);
  const matcher = tsconfig === null ? null : createPathsMatcher(tsconfig);
  const paths = tsconfig?.config.compilerOptions?.paths;
  if (matcher === null || paths === undefined) return {};
  const ownName = selfReferencedName(directory);
  const aliases: Record<string, string> = {};
  for (const pattern of Object.keys(paths)) {
    const prefix = pattern.endsWith('/*') ? pattern.slice(0, -2) : pattern;
    if (prefix.includes('*') || prefix === ownName || prefix.startsWith(`${ownName}/`)) continue;
    // The matcher applies baseUrl and each file's own directory; a marker shows where `*` went.
    const [target] = matcher(prefix === pattern ? pattern : `${prefix}/\0`);
    if (target === undefined) continue;
    if (prefix === pattern) aliases[prefix] = target;
    else if (target.endsWith('/\0')) aliases[prefix] = target.slice(0, -2);
  }
  return aliases;
}

/** The name of the package `directory` is in, when Node resolves that name there by itself. */
function selfReferencedName(directory: string): string | undefined {
  for (let current = directory; ; current = dirname(current)) {
    let manifest: { name?: unknown; exports?: unknown } | undefined;
    try {
      manifest = JSON.parse(readFileSync(join(current, 'package.json'), 'utf8'));
    } catch {
      if (dirname(current) === current) return undefined;
      continue;
    }
    const exports = JSON.stringify(manifest?.exports ?? null);
    const selfReference = exports !== 'null' && !/"(?:import|require)"\s*:/.test(exports);
    return selfReference && typeof manifest?.name === 'string' ? manifest.name : undefined;
  }
}
