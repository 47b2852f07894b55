import { defineConfig, defineJob } from 'resil';
import { Redis } from 'ioredis';
import { RedisLockStore } from 'resil/redis';
const store = new RedisLockStore(new Redis('redis://127.0.0.1:6379'), { prefix: 'memt1796521950:' });
const jobs = [];
for (let index = 0; index < 10000; index++) {
  jobs.push(defineJob({ name: 'tenant-' + index, schedule: '30 52 01 * * *', timezone: 'UTC', run: () => {} }));
}
export default defineConfig({ store, jobs });
