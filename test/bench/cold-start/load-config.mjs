// `node load-config.mjs <loader> <config>`: imports a TypeScript config through one TypeScript loader
// and exits, so the cold-start bench can time each loader alone beside the CLI. Loaders: `jiti` (as
// the CLI uses it), `tsx-import` (tsx's tsImport()), `tsx-register` (tsx's register(), then import()).
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [loader, config] = process.argv.slice(2);
const file = resolve(config ?? '');
const url = pathToFileURL(file).href;

const loaders = {
  jiti: () =>
    createRequire(import.meta.url)('jiti')
      .createJiti(import.meta.url)
      .import(file),
  'tsx-import': async () => (await import('tsx/esm/api')).tsImport(url, import.meta.url),
  'tsx-register': async () => {
    (await import('tsx/esm/api')).register();
    return import(url);
  },
};

if (!(loader in loaders)) {
  console.error(`usage: node load-config.mjs <${Object.keys(loaders).join('|')}> <config>`);
  process.exit(2);
}
const namespace = await loaders[loader]();
if (namespace.default === undefined) throw new Error(`${file} has no default export`);
