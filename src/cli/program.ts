import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import type { CommandHelpers } from './command-helpers.ts';
import { registerDashboardCommand } from './commands/dashboard.ts';
import { registerInstancesCommand } from './commands/instances.ts';
import { registerJobsCommands } from './commands/jobs.ts';
import { registerLockCommands } from './commands/lock.ts';
import { registerRunCommand } from './commands/run.ts';

/** From the package's package.json, two levels up from src/cli/ and from dist/cli/ or dist/chunks/. */
function packageVersion(): string {
  const manifest = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(manifest) as { version: string }).version;
}

/**
 * The `resil` commander program. Each command lives in its own file under `commands/` and keeps
 * its top-level imports light: heavy modules (the config loader, tsx, croner, the scheduler) load
 * inside actions, so `--help` and `--version` start fast.
 */
export function createProgram(helpers: CommandHelpers): Command {
  const program = new Command('resil')
    .description('Run cron jobs once across a fleet, with leases, fencing tokens, timeouts and retries.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .helpCommand('help [command]', 'show help for a command')
    .option('-c, --config <file>', 'config file (default: found from the working directory by cosmiconfig)')
    .showSuggestionAfterError()
    .showHelpAfterError('(see resil --help)')
    .configureOutput({
      writeOut: (text) => helpers.stdout.write(text),
      // Commander's suggestion, in resil's own spelling: `(did you mean "list"?)`, as for job names.
      writeErr: (text) =>
        helpers.stderr.write(text.replace(/\(Did you mean (\S+)\?\)/g, '(did you mean "$1"?)')),
    })
    .exitOverride()
    .addHelpText(
      'after',
      `
Config: resil.config.ts / .js / .mjs, .resilrc, .resilrc.json, .resilrc.yaml or package.json#resil,
found from the working directory up to the project root, or given with --config.

Exit codes (each command's --help says which it uses):
  0    success (and help: \`resil\`, \`resil jobs\` or \`resil lock\` alone print their help)
  1    failure: the job failed (jobs run), the store is unreachable (every command; jobs run
       then says "not run"), or a command that needs a shared store (jobs pause/resume,
       instances) is given the in-memory one
  2    usage error (unknown command, option or job, a bad value such as --limit or
       --log-level) or bad config
  3    jobs run: skipped, because its lock is held elsewhere or it is paused (without --force)
  130  interrupted by SIGINT (143 SIGTERM): jobs run, or resil run after a second signal

Examples:
  $ resil run                          run every enabled job until Ctrl-C
  $ resil jobs list                    show each job's schedule and next run
  $ resil jobs run nightly-report      run one job now and exit
  $ resil jobs history nightly-report  show its last runs, newest first
  $ resil jobs next nightly-report     show its next fire times in its timezone
  $ resil jobs pause nightly-report --reason "db migration"   skip it fleet-wide until resumed
  $ resil lock status nightly-report   show who holds a lock
  $ resil instances                    list the fleet's live instances and their clock offsets
  $ resil dashboard                    serve a web page of the fleet on http://127.0.0.1:4300/
  $ resil --config ops/resil.config.ts jobs list --json`,
    );

  // The scheduler's long-running command.
  registerRunCommand(program, helpers);
  // One-shot commands.
  registerJobsCommands(program, helpers);
  registerLockCommands(program, helpers);
  registerInstancesCommand(program, helpers);
  registerDashboardCommand(program, helpers);

  for (const command of program.commands) inheritSettings(command, program);
  return program;
}

/** Subcommands write through the same streams and report errors the same way as the program. */
function inheritSettings(command: Command, program: Command): void {
  command.copyInheritedSettings(program);
  command.showHelpAfterError(`(see ${commandPath(command)} --help)`);
  if (command.commands.length > 0) helpWithoutSubcommand(command);
  for (const child of command.commands) inheritSettings(child, command);
}

function commandPath(command: Command): string {
  const names: string[] = [];
  for (let current: Command | null = command; current !== null; current = current.parent) {
    names.unshift(current.name());
  }
  return names.join(' ');
}

/**
 * `resil jobs` alone prints its help on stdout and exits 0, like `resil` alone: asking a command
 * group what it can do is not a mistake. An unknown subcommand (`resil jobs lsit`) stays a usage
 * error (exit 2, with a suggestion).
 */
function helpWithoutSubcommand(command: Command): void {
  command.allowExcessArguments().action((_options: unknown, self: Command) => {
    if (self.args.length > 0) (self as unknown as { unknownCommand(): never }).unknownCommand();
    self.help();
  });
}
