import { redactCredentials } from '../../scheduler/credentials.ts';

/** A store error as one line for the terminal: its message, never a connection URL's credentials. */
export function describeStoreError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return redactCredentials(message.split('\n')[0] ?? message);
}
