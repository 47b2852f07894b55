import { defineJob } from 'resil';

/**
 * Every 5 seconds: proves the runner is alive. With several instances on one Redis, each beat is
 * logged by exactly one of them, each time with a higher fencing token.
 */
export default defineJob({
  name: 'heartbeat',
  schedule: '*/5 * * * * *',
  lock: { ttl: '10s' },
  timeout: '2s',
  run: async (ctx) => {
    // ctx.logger already carries job, scheduledAt and attempt.
    ctx.logger.info({ token: ctx.token, uptimeS: Math.round(process.uptime()) }, 'heartbeat');
  },
});
