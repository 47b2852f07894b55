import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StaleTokenError } from 'resil';
import { redisStore } from './store.ts';

/** Where the examples write their output when the store is in memory. */
export const outputDirectory = join(tmpdir(), 'resil-examples');

// MemoryLockStore's tokens live in this process, so the fence that checks them lives here too.
const highestTokens = new Map<string, number>();

/**
 * Writes `value` under `resource`/`name` only if `token` is not older than the newest token that
 * already wrote to `resource`: a job that lost its lease while paused cannot overwrite the work
 * of the holder that took over. Throws `StaleTokenError` and writes nothing otherwise.
 *
 * With Redis the check and the write are one script on the server (`RedisLockStore#fencedSet`);
 * in memory the check guards a file write.
 */
export async function writeFenced(
  resource: string,
  token: number,
  name: string,
  value: string,
): Promise<string> {
  if (redisStore !== undefined) {
    await redisStore.fencedSet(resource, token, name, value);
    return `redis ${redisStore.prefix}{${resource}}:value:${name}`;
  }
  const highest = highestTokens.get(resource) ?? 0;
  if (token < highest) throw new StaleTokenError(resource, token, highest);
  highestTokens.set(resource, token);
  await mkdir(outputDirectory, { recursive: true });
  const file = join(outputDirectory, `${resource}.${name}`);
  await writeFile(file, value);
  return file;
}
