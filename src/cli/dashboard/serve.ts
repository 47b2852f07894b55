import { hostname } from 'node:os';
import { storeNameOf } from '../../strategies/lock/store.ts';
import type { CommandHelpers } from '../command-helpers.ts';
import { containJobFaults, faultExitCode } from '../job-faults.ts';
import { isLoopbackHost } from '../listen-address.ts';
import { untilStopped } from '../stop-signals.ts';
import { resolveLogLevel, UsageError } from '../usage-error.ts';
import { inMemoryStoreNote } from '../views/store-read.ts';
import { type AllowedHost, formatAllowedHost } from './request-guard.ts';
import { type DashboardServer, startDashboardServer } from './server.ts';

export interface DashboardOptions {
  readonly port: number;
  readonly host: string;
  readonly allowActions: boolean;
  /** `--allowed-host`, in the order given. */
  readonly allowedHosts: readonly AllowedHost[];
}

/** Why listening failed, in words a user can act on. */
function listenError(error: unknown, options: DashboardOptions): UsageError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const where = `${options.host} port ${options.port}`;
  switch (code) {
    case 'EADDRINUSE':
      return new UsageError(`cannot listen on ${where}: the port is in use; pick another with --port`);
    case 'EACCES':
      return new UsageError(`cannot listen on ${where}: not permitted (ports below 1024 need privileges)`);
    case 'EADDRNOTAVAIL':
      return new UsageError(
        `cannot listen on ${where}: --host ${options.host} is not an address of this machine`,
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new UsageError(`cannot listen on ${where}: --host ${options.host} does not resolve`);
    default:
      return new UsageError(`cannot listen on ${where}: ${(error as Error).message ?? String(error)}`);
  }
}

/**
 * `resil dashboard`: serves the page and its API until SIGINT/SIGTERM, then stops (triggered runs
 * get 5 s to settle after their signals abort) and exits 0; a second signal exits at once.
 * Exit 2 for a bad config or when it cannot listen on `--host`/`--port`.
 */
export async function serveDashboard(helpers: CommandHelpers, options: DashboardOptions): Promise<void> {
  const level = resolveLogLevel(undefined);
  const config = await helpers.loadConfig();
  const { createLogger } = await import('../logger.ts');
  const logger = createLogger({ level });
  const { errorStyles, stderr } = helpers;
  const instance = `dashboard@${hostname()}`;
  if (options.allowActions && !isLoopbackHost(options.host)) {
    stderr.write(
      `${errorStyles.yellow('warning:')} --host ${options.host} is not a loopback address and --allow-actions is on: anyone who can reach it can trigger, pause and resume jobs (the Host and Origin checks and the page's token stop other web sites, not other people); put it behind an authenticating proxy, or drop --allow-actions\n`,
    );
  }
  let server: DashboardServer;
  try {
    server = await startDashboardServer({
      config,
      host: options.host,
      port: options.port,
      actions: options.allowActions,
      allowedHosts: options.allowedHosts,
      instance,
      logger,
    });
  } catch (error) {
    throw listenError(error, options);
  }
  const note = inMemoryStoreNote(config.store);
  if (note !== undefined) stderr.write(errorStyles.dim(note));
  const store = storeNameOf(config.store);
  logger.info(
    {
      href: server.url,
      host: options.host,
      port: server.port,
      ...(options.allowedHosts.length === 0
        ? {}
        : { allowedHosts: options.allowedHosts.map(formatAllowedHost) }),
      actions: options.allowActions,
      instance,
      store,
    },
    `dashboard on ${server.url} (${options.allowActions ? `actions on, recorded as ${instance}` : 'read-only'})`,
  );

  // Triggered runs are jobs like `resil run`'s: their stray errors fail them; a fault outside
  // them stops the dashboard, exit 1.
  const fault = new AbortController();
  const faults = containJobFaults({ logger, onFault: () => fault.abort() });
  await untilStopped({
    logger,
    stopping: 'stopping the dashboard',
    stop: () => server.close(),
    abort: fault.signal,
  });
  logger.info('dashboard stopped');
  logger.flush();
  faults.dispose();
  helpers.setExitCode(faults.faulted ? faultExitCode : 0);
}
