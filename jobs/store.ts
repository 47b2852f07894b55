import { type LockStore, MemoryLockStore } from 'resil';
import type { RedisLockStore } from 'resil/redis';

/**
 * The Redis store when `REDIS_URL` is set, else undefined. ioredis and `resil/redis` are imported
 * only then, so `resil jobs list` on the in-memory examples does not pay for them.
 */
async function createRedisStore(): Promise<RedisLockStore | undefined> {
  const url = process.env.REDIS_URL;
  if (url === undefined || url === '') return undefined;
  const [{ Redis }, { RedisLockStore }] = await Promise.all([import('ioredis'), import('resil/redis')]);
  // Fail fast instead of queueing commands while Redis is down; the store bounds each command too.
  const client = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
  // Connection errors are reported by the store's operations; without a listener ioredis prints them.
  client.on('error', () => {});
  return new RedisLockStore(client, { prefix: 'resil-examples:' });
}

/** The examples' store on Redis, for what only Redis offers (a fenced write inside one script). */
export const redisStore = await createRedisStore();

/**
 * The store every example job shares: Redis when `REDIS_URL` is set (run several `resil run`
 * processes against it and each occurrence still runs once), else one process's memory.
 */
export const store: LockStore = redisStore ?? new MemoryLockStore();
