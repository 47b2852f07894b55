import { defineConfig } from 'resil';
import cacheRebuild from './jobs/cache-rebuild.ts';
import heartbeat from './jobs/heartbeat.ts';
import nightlyReport from './jobs/nightly-report.ts';
import { store } from './jobs/store.ts';

/**
 * The example jobs. `npx resil run` runs them (in memory, or on Redis when REDIS_URL is set);
 * `npx resil jobs list` shows when each runs next.
 */
export default defineConfig({
  store,
  timezone: 'UTC',
  jobs: [heartbeat, cacheRebuild, nightlyReport],
});
