/** Where cosmiconfig looks for a config, in order, in each directory it searches. */
export const configSearchPlaces = [
  'package.json',
  '.resilrc',
  '.resilrc.json',
  '.resilrc.yaml',
  '.resilrc.yml',
  '.resilrc.js',
  '.resilrc.mjs',
  '.resilrc.ts',
  'resil.config.ts',
  'resil.config.mts',
  'resil.config.js',
  'resil.config.mjs',
  'resil.config.cjs',
] as const;
