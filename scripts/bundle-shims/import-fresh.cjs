// What the bundled cosmiconfig needs of import-fresh (its loadJsSync, the fallback for a JS config
// that import() failed on): require an absolute path anew. The package itself finds its caller
// through __filename and the stack, which a bundle does not keep.
const { createRequire } = require('node:module');

module.exports = function importFresh(file) {
  const requireFrom = createRequire(file);
  const resolved = requireFrom.resolve(file);
  delete requireFrom.cache[resolved];
  return requireFrom(resolved);
};
