export { redisLockStoreDefaults } from './defaults.ts';
export type { FencedSetOptions, RedisLockStoreOptions } from './options.ts';
export { RedisLockStore } from './store.ts';
