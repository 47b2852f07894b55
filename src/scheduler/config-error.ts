import { describeValue, errorGuard, ResilienceError } from '../pipeline/errors.ts';

/** One thing wrong with a config: where it is and what is wrong, in one line. */
export interface ConfigProblem {
  /** The config file (or the file the problem is in, such as a job module). */
  readonly file: string;
  /** The job's name (or `jobs[i]` when it has none), when the problem is in a job. */
  readonly job?: string;
  /** The option's path, such as `lock.ttl` or `shutdownGrace`. */
  readonly option?: string;
  /** The offending value, when there is one. */
  readonly value?: unknown;
  /** What is wrong, in one line, without the file, job or option (those are added). */
  readonly message: string;
}

/** Renders a problem as one line: `file: job "x": option "lock.ttl": message`. */
export function formatConfigProblem(problem: ConfigProblem): string {
  const parts = [problem.file];
  if (problem.job !== undefined) parts.push(`job ${JSON.stringify(problem.job)}`);
  if (problem.option !== undefined) parts.push(`option ${JSON.stringify(problem.option)}`);
  return `${parts.join(': ')}: ${problem.message}`;
}

/**
 * The config could not be found, loaded or validated. Carries every problem found (validation
 * reports them all at once); `file`, `job`, `option` and `value` are those of the first one.
 * The CLI prints one line per problem and exits with code 2.
 */
export class ConfigError extends ResilienceError {
  readonly code = 'CONFIG_INVALID';
  readonly problems: readonly ConfigProblem[];
  readonly file: string;
  readonly job: string | undefined;
  readonly option: string | undefined;
  readonly value: unknown;

  constructor(problems: ConfigProblem | readonly ConfigProblem[], options?: { cause?: unknown }) {
    const list = Array.isArray(problems)
      ? (problems as readonly ConfigProblem[])
      : [problems as ConfigProblem];
    if (list.length === 0) throw new TypeError('ConfigError needs at least one problem.');
    super(list.map(formatConfigProblem).join('\n'), options);
    this.name = 'ConfigError';
    this.problems = list;
    const first = list[0]!;
    this.file = first.file;
    this.job = first.job;
    this.option = first.option;
    this.value = first.value;
  }
}

export const isConfigError = errorGuard<ConfigError>('CONFIG_INVALID');

/** `got <value>` for messages, safe for functions and large objects. */
export function got(value: unknown): string {
  return `got ${describeValue(value)}`;
}
