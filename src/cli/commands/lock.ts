import type { Command } from 'commander';
import type { CommandHelpers } from '../command-helpers.ts';

/** `resil lock status <key>`. */
export function registerLockCommands(program: Command, helpers: CommandHelpers): void {
  const lock = program
    .command('lock')
    .description("inspect the leases in the config's store")
    .addHelpText(
      'after',
      `
Examples:
  $ resil lock status nightly-report`,
    );

  lock
    .command('status')
    .description('who holds the lease on <key>: owner, fencing token and expiry')
    .argument('<key>', "the lock key (a job's key defaults to its name)")
    .option('--json', 'print one JSON object instead of text')
    .addHelpText(
      'after',
      `
Exit codes: 0 held or free; 1 store unreachable; 2 bad config.

Examples:
  $ resil lock status nightly-report
  $ resil lock status nightly-report --json`,
    )
    .action(async (key: string, options: { json?: boolean }) => {
      const { showLockStatus } = await import('./lock-status.ts');
      await showLockStatus(helpers, key, { json: options.json === true });
    });
}
