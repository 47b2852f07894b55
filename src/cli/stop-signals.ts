import type { Logger } from 'pino';
import { watchLauncher } from './launcher.ts';

/** The exit code of a process ended by a signal: 128 plus its number. */
export const signalExitCodes: Readonly<Record<string, number>> = { SIGINT: 130, SIGTERM: 143 };

export interface StopSignalsOptions {
  logger: Pick<Logger, 'info' | 'warn' | 'error' | 'flush'>;
  /** What the stop does, for the log: `'stopping gracefully'`, `'stopping the dashboard'`. */
  stopping: string;
  /** The graceful stop, started by the first signal (or by the launcher's exit). */
  stop(): Promise<void>;
  /** Starts the stop too when it aborts (a fault the command cannot recover from). */
  abort?: AbortSignal;
}

/**
 * Resolves once a long-running command (`resil run`, `resil dashboard`) has stopped: the first
 * SIGINT or SIGTERM starts `stop()`, a second exits at once with the signal's exit code. Started
 * by `npx resil ...` or `npm start`, whose npm exits on SIGTERM without passing it on, the
 * launcher's exit starts the stop too (else the command would run on, orphaned; see launcher.ts).
 */
export function untilStopped({ logger, stopping, stop, abort }: StopSignalsOptions): Promise<void> {
  return new Promise((resolve) => {
    let stopStarted = false;
    const startStop = () => {
      if (stopStarted) return;
      stopStarted = true;
      stopWatchingLauncher();
      stop().then(resolve, (error: unknown) => {
        logger.error({ err: error }, 'error while stopping');
        resolve();
      });
    };
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopStarted) {
        logger.warn({ signal }, 'second signal: exiting at once');
        logger.flush();
        process.exit(signalExitCodes[signal] ?? 130);
      }
      logger.info({ signal }, `signal received: ${stopping} (send it again to exit at once)`);
      startStop();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const stopWatchingLauncher = watchLauncher((launcher) => {
      if (stopStarted) return;
      logger.info({ launcher }, `${launcher} exited: ${stopping}`);
      startStop();
    });
    abort?.addEventListener('abort', startStop, { once: true });
  });
}
