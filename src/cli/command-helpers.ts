import type { ResolvedConfig } from '../scheduler/job.ts';
import type { Styles, TextOutput } from './output.ts';

/** What every command receives from the program around it. */
export interface CommandHelpers {
  /**
   * Loads the config given by the global `--config <file>`, or found from the working directory,
   * once per process (later calls return the same config). Throws `ConfigError`, which the
   * program reports and turns into exit code 2. The program closes the config's store when the
   * command returns.
   */
  loadConfig(): Promise<ResolvedConfig>;
  /**
   * Where command output goes (`--json` documents, tables). Control characters written to it are
   * shown escaped (`printableOutput`), whatever their source; logs go to the process's stdout.
   */
  readonly stdout: TextOutput;
  /** Where warnings and errors go, escaped as `stdout` is. */
  readonly stderr: TextOutput;
  /** Colours for human output on stdout: off unless stdout is a terminal, and off under NO_COLOR. */
  readonly styles: Styles;
  /** Colours for stderr. */
  readonly errorStyles: Styles;
  /** The exit code once the command's action returns (the process then exits explicitly). */
  setExitCode(code: number): void;
}
