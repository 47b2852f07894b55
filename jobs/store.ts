import { type LockStore, MemoryLockStore } from 'resil';

/**
 * The store every example job shares: Redis when `REDIS_URL` is set (run several `resil run`
 * processes against it and each occurrence still runs once), else one process's memory.
 *
 * ioredis is imported only when it is used, so `resil jobs list` does not pay for it.
 */
async function createStore(): Promise<LockStore> {
  const url = process.env.REDIS_URL;
  if (url === undefined || url === '') return new MemoryLockStore();
  const [{ Redis }, { RedisLockStore }] = await Promise.all([import('ioredis'), import('resil/redis')]);
  // Fail fast instead of queueing commands while Redis is down; the store bounds each command too.
  const client = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
  // Connection errors are reported by the store's operations; without a listener ioredis prints them.
  client.on('error', () => {});
  return new RedisLockStore(client, { prefix: 'resil-examples:' });
}

export const store: LockStore = await createStore();
