import { freemem, loadavg, totalmem } from 'node:os';
import { defineJob } from 'resil';
import { writeFenced } from './fenced-write.ts';

/**
 * At 02:00 UTC: writes a small report, fenced by the run's token. Run it now with
 * `npx resil jobs run nightly-report`. A report is written by exactly one instance per night: the
 * lock keeps the others out while it runs, the run ledger keeps them from running the same night
 * again afterwards, and the fence rejects a write from a holder that lost its lease.
 */
export default defineJob({
  name: 'nightly-report',
  schedule: '0 2 * * *',
  timezone: 'UTC',
  lock: { ttl: '1m' },
  timeout: '5m',
  retry: { maxRetryAttempts: 3, delay: '10s', backoffType: 'exponential', useJitter: true },
  catchUp: '6h',
  run: async (ctx) => {
    const report = {
      night: ctx.scheduledAt.toISOString().slice(0, 10),
      scheduledAt: ctx.scheduledAt.toISOString(),
      attempt: ctx.attempt,
      loadAverage: loadavg(),
      memoryUsedRatio: Number((1 - freemem() / totalmem()).toFixed(3)),
    };
    // Commit only while we still hold the lease; the fence catches what this check cannot (a pause).
    ctx.signal.throwIfAborted();
    const where = await writeFenced(
      'nightly-report',
      ctx.token!,
      'latest.json',
      JSON.stringify(report, null, 2),
    );
    ctx.logger.info({ token: ctx.token, where }, 'report written');
  },
});
