import type { Command } from 'commander';
import { hasInstanceRegistry } from '../../ledger/contract.ts';
import type { CommandHelpers } from '../command-helpers.ts';
import { formatTable } from '../output.ts';
import { formatRelative, formatTimeIn, localTimezone } from '../time-format.ts';
import { instanceEntryOf } from '../views/instances.ts';
import { inMemoryStoreNote, readStore, storeFailure } from '../views/store-read.ts';

/** `resil instances` exit codes (a bad config is 2). */
const instancesExitCodes = { listed: 0, storeError: 1 } as const;

/** `+12`, `-2003`: the sign says which way the instance's clock is off. */
function formatOffset(ms: number): string {
  return ms > 0 ? `+${ms}` : String(ms);
}

/** `resil instances [--json]`: exit 0 listed (none is fine), 1 no shared registry or store unreachable. */
export async function listInstances(helpers: CommandHelpers, options: { json: boolean }): Promise<void> {
  const { store } = await helpers.loadConfig();
  const { errorStyles, styles } = helpers;
  const inMemory = inMemoryStoreNote(store) !== undefined;
  if (inMemory || !hasInstanceRegistry(store)) {
    const why = inMemory
      ? "the config's store is the in-memory MemoryLockStore, which only this process sees"
      : "the config's store keeps no instance registry (registerInstance, removeInstance, listInstances)";
    helpers.stderr.write(
      `${errorStyles.red('error:')} resil instances needs a shared store that every resil run registers in, RedisLockStore, PostgresLockStore or MysqlLockStore: ${why}\n`,
    );
    helpers.setExitCode(instancesExitCodes.storeError);
    return;
  }
  const read = await readStore(store, () => store.listInstances());
  if (!read.ok) {
    helpers.stderr.write(`${errorStyles.red('error:')} ${storeFailure(read)}\n`);
    helpers.setExitCode(instancesExitCodes.storeError);
    return;
  }
  const entries = read.value.map(instanceEntryOf);
  if (options.json) {
    helpers.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
    return;
  }
  if (entries.length === 0) {
    helpers.stdout.write('No live instances (none has sent a heartbeat within the last 15 s).\n');
    return;
  }
  const timezone = localTimezone();
  const now = Date.now();
  const header = ['INSTANCE', 'HOST', 'PID', 'VERSION', 'STARTED', 'JOBS', 'CLOCK OFFSET (MS)', 'LAST SEEN'];
  const rows = read.value.map((instance) => [
    styles.bold(instance.instance),
    instance.host,
    String(instance.pid),
    instance.version,
    formatTimeIn(new Date(instance.startedAt), timezone),
    String(instance.jobs),
    formatOffset(instance.clockOffsetMs),
    formatRelative(new Date(instance.lastSeenAt), now),
  ]);
  helpers.stdout.write(`${formatTable(header.map(styles.dim), rows)}\n`);
}

/** Adds `resil instances [--json]`. */
export function registerInstancesCommand(program: Command, helpers: CommandHelpers): Command {
  return program
    .command('instances')
    .description('list the live instances of the fleet (each resil run registered in the store)')
    .option('--json', 'print a JSON array instead of a table')
    .addHelpText(
      'after',
      `
Each resil run registers in the store once it has started and sends a heartbeat every 5 s; it is
listed until it stops cleanly, or 15 s after its last heartbeat. Columns: instance name, host, pid,
resil version, when it started, how many jobs it schedules, the offset of the store's clock to
the instance's in ms (store minus instance: -2000 means the instance's clock is 2 s ahead), and
its last heartbeat (store clock). --json prints an array of objects with instance, host, pid,
version, startedAt, jobs, clockOffsetMs and lastSeenAt (ISO 8601 UTC strings for the instants).

Needs a shared store (RedisLockStore, PostgresLockStore or MysqlLockStore): the in-memory store
lists nothing another process could see.

Exit codes: 0 listed (also when none is live); 1 in-memory store, a store without an instance
registry, or store unreachable; 2 bad config.

Examples:
  $ resil instances
  $ resil instances --json`,
    )
    .action(async (options: { json?: boolean }) => {
      await listInstances(helpers, { json: options.json === true });
    });
}
