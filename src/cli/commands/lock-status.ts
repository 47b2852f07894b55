import type { LeaseInfo } from '../../strategies/lock/store.ts';
import type { CommandHelpers } from '../command-helpers.ts';
import { formatRelative, formatTimeIn, localTimezone } from '../time-format.ts';
import { leaseEntryOf } from '../views/lease.ts';
import { inMemoryStoreNote, readStore, storeFailure } from '../views/store-read.ts';

/** `resil lock status --json`: `owner`, `token` and `expiresAt` only when `held`. */
export interface LockStatus {
  key: string;
  held: boolean;
  owner?: string;
  /** The instance in an owner id of the form `<instance>/<uuid>`, as `resil run` and `resil jobs run` make. */
  instance?: string;
  token?: number;
  /** ISO 8601, by the store's clock. */
  expiresAt?: string;
}

/** `resil lock status <key> [--json]`: exit 0 held or free, 1 store unreachable. */
export async function showLockStatus(
  helpers: CommandHelpers,
  key: string,
  options: { json: boolean },
): Promise<void> {
  const config = await helpers.loadConfig();
  const { store } = config;
  const { errorStyles } = helpers;
  if (typeof store.inspect !== 'function') {
    helpers.stderr.write(
      `${errorStyles.red('error:')} the config's store cannot report leases (it has no inspect() method)\n`,
    );
    helpers.setExitCode(1);
    return;
  }
  const read = await readStore(store, () => store.inspect!(key));
  if (!read.ok) {
    helpers.stderr.write(`${errorStyles.red('error:')} ${storeFailure(read)}\n`);
    helpers.setExitCode(1);
    return;
  }
  const lease: LeaseInfo | undefined = read.value;

  const entry = lease === undefined ? undefined : leaseEntryOf(lease);
  const status: LockStatus =
    entry === undefined
      ? { key, held: false }
      : {
          key,
          held: true,
          owner: entry.owner,
          ...(entry.instance === null ? {} : { instance: entry.instance }),
          token: entry.token,
          expiresAt: entry.expiresAt,
        };
  if (options.json) {
    helpers.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
    return;
  }
  const note = inMemoryStoreNote(store);
  if (note !== undefined) helpers.stderr.write(errorStyles.dim(note));
  const { styles } = helpers;
  if (lease === undefined) {
    helpers.stdout.write(`Lock ${styles.bold(key)}: ${styles.green('free')} (no live lease)\n`);
    return;
  }
  helpers.stdout.write(
    [
      `Lock ${styles.bold(key)}: ${styles.yellow('held')}`,
      `  owner       ${lease.owner}`,
      ...(status.instance === undefined ? [] : [`  instance    ${styles.bold(status.instance)}`]),
      `  token       ${lease.token}`,
      `  expires at  ${formatTimeIn(lease.expiresAt, localTimezone())} ${styles.dim(`(${formatRelative(lease.expiresAt, Date.now())}, store clock)`)}`,
      '',
    ].join('\n'),
  );
}
