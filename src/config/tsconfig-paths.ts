import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * The `compilerOptions.paths` of the tsconfig.json that governs `directory` (get-tsconfig finds it
 * and follows its `extends`) as jiti's prefix aliases: `"@lib/*": ["./lib/*"]` becomes `@lib` ->
 * `/project/lib`. Each pattern's first target counts; one with a `*` elsewhere than at its end has
 * no alias. The project's own package name keeps Node's self-reference where it has one (see
 * {@link selfReference}), so that the config loads the copy of the package the command loads.
 */
export function tsconfigPathAliases(directory: string): Record<string, string> {
  // require(): its CommonJS build loads faster, and only for a TypeScript config (about 4 ms).
  const tsconfigs: typeof import('get-tsconfig') = createRequire(import.meta.url)('get-tsconfig');
  const tsconfig = tsconfigs.getTsconfig(directory);
  const matcher = tsconfig === null ? null : tsconfigs.createPathsMatcher(tsconfig);
  if (matcher === null) return {};
  const ownName = selfReference(directory);
  const aliases: Record<string, string> = {};
  for (const pattern of Object.keys(tsconfig?.config.compilerOptions?.paths ?? {})) {
    const prefix = pattern.replace(/\/\*$/, '');
    if (prefix.includes('*') || (ownName !== undefined && `${prefix}/`.startsWith(`${ownName}/`))) continue;
    // The matcher applies baseUrl and the directory of the file that set `paths`; a NUL stands for `*`.
    const star = prefix === pattern ? '' : '/\0';
    const [target] = matcher(`${prefix}${star}`);
    if (target?.endsWith(star)) aliases[prefix] = target.slice(0, target.length - star.length);
  }
  return aliases;
}

/**
 * The name of the package `directory` is in when Node resolves that name there itself: an
 * `exports` that does not tell `import` from `require` apart (else the alias decides, as tsc's).
 */
function selfReference(directory: string): string | undefined {
  let found = directory;
  while (!existsSync(join(found, 'package.json')) && dirname(found) !== found) found = dirname(found);
  try {
    const { name, exports } = JSON.parse(readFileSync(join(found, 'package.json'), 'utf8'));
    const conditions = JSON.stringify(exports ?? null);
    const selfReferenced = conditions !== 'null' && !/"(?:import|require)"\s*:/.test(conditions);
    return selfReferenced && typeof name === 'string' ? name : undefined;
  } catch {
    return undefined;
  }
}
