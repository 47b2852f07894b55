import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineJob } from 'resil';
import { writeFenced } from './fenced-write.ts';

const directory = dirname(fileURLToPath(import.meta.url));

/**
 * Every 30 seconds: rebuilds a content-hash index of the files next to it. Checks its signal
 * between files, so a timeout or a lost lease stops it, and writes the index through the fence.
 * Retried twice on failure.
 */
export default defineJob({
  name: 'cache-rebuild',
  schedule: '*/30 * * * * *',
  lock: { key: 'cache', ttl: '30s' },
  timeout: '20s',
  retry: { maxRetryAttempts: 2, delay: '1s', backoffType: 'exponential' },
  run: async (ctx) => {
    const index: Record<string, string> = {};
    for (const name of (await readdir(directory)).sort()) {
      ctx.signal.throwIfAborted();
      const content = await readFile(join(directory, name), { signal: ctx.signal });
      index[name] = createHash('sha256').update(content).digest('hex').slice(0, 16);
    }
    ctx.signal.throwIfAborted();
    const where = await writeFenced('cache', ctx.token!, 'index.json', JSON.stringify(index, null, 2));
    ctx.logger.info({ entries: Object.keys(index).length, token: ctx.token, where }, 'cache rebuilt');
  },
});
