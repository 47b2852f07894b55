import type { EventEmitter } from 'node:events';
import { redactCredentials } from '../credentials.ts';

const guarded = Symbol.for('resil.redis.errorEventsGuarded');

/**
 * Makes the client's `'error'` events safe to log and never fatal, without hiding them.
 *
 * - ioredis puts the failed command on a reply error, and for a refused password that is
 *   `{ name: 'auth', args: [password] }`: a listener that logs the error object (pino's `err`
 *   serializer does) would write the password. The guard runs first (prepended) and masks the
 *   arguments of `AUTH` and `HELLO` before any other listener sees the error.
 * - Having a listener changes what ioredis does with an error: with none it prints
 *   `[ioredis] Unhandled error event: <stack>`; with one it only emits. So when the guard is the
 *   only listener it prints that same line, and a user without a listener sees what they saw
 *   before. A listener also means an `'error'` emitted directly (as Cluster does for sharded
 *   subscribers) can never become an uncaught exception.
 *
 * Installed once per client, however many stores share it.
 */
export function guardErrorEvents(client: EventEmitter): void {
  const marked = client as EventEmitter & { [guarded]?: true };
  if (marked[guarded]) return;
  marked[guarded] = true;
  client.prependListener('error', (error: unknown) => {
    maskCommandCredentials(error);
    if (client.listenerCount('error') === 1) {
      console.error(
        '[ioredis] Unhandled error event:',
        error instanceof Error ? redactCredentials(String(error.stack)) : error,
      );
    }
  });
}

const commandsWithCredentials = new Set(['auth', 'hello']);

/** Masks the arguments of an `AUTH`/`HELLO` command attached to an ioredis error, in place. */
function maskCommandCredentials(error: unknown): void {
  if (typeof error !== 'object' || error === null) return;
  const command = (error as { command?: { name?: unknown; args?: unknown } }).command;
  if (
    command !== null &&
    typeof command === 'object' &&
    typeof command.name === 'string' &&
    commandsWithCredentials.has(command.name.toLowerCase()) &&
    Array.isArray(command.args)
  ) {
    command.args = command.args.map(() => '***');
  }
}
