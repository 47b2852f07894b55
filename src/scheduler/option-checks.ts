import { parseDuration, parsePositiveDuration } from '../pipeline/duration.ts';
import { isInvalidOptionError } from '../pipeline/errors.ts';
import { got } from './config-error.ts';
import { closestName } from './did-you-mean.ts';
import type { DstPolicy, JobIsolation, ResilConfig } from './job.ts';
import { dstPolicies, hookOptions, isolations } from './option-names.ts';
import { isValidTimezone } from './timezone.ts';

/** Reports one problem with an option; the caller adds the file and the job. */
export type Report = (problem: { option?: string; value?: unknown; message: string }) => void;

/** An object literal's shape (not null, not an array): what an options object must be. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reports each key of `object` that is not a known option, with the closest known name when one is likely meant. */
export function checkUnknownOptions(
  object: Record<string, unknown>,
  known: readonly string[],
  prefix: string,
  report: Report,
): void {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue;
    const suggestion = closestName(key, known);
    report({
      option: `${prefix}${key}`,
      message: `unknown option${suggestion === undefined ? '' : ` (did you mean "${prefix}${suggestion}"?)`}; known options: ${known.join(', ')}`,
    });
  }
}

/** Milliseconds, or `undefined` after reporting a bad duration. */
export function duration(
  value: unknown,
  option: string,
  report: Report,
  options: { positive: boolean },
): number | undefined {
  try {
    return options.positive ? parsePositiveDuration(value, option) : parseDuration(value, option);
  } catch (error) {
    if (!isInvalidOptionError(error)) throw error;
    report({ option, value, message: `expected ${error.expected}, ${got(value)}` });
    return undefined;
  }
}

/** An IANA timezone, or `undefined` when absent or after reporting one that is not. */
export function timezone(value: unknown, option: string, report: Report): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && value !== '' && isValidTimezone(value)) return value;
  report({
    option,
    value,
    message: `expected an IANA timezone such as "UTC" or "Europe/Paris", ${got(value)}`,
  });
  return undefined;
}

/** `onSuccess`, `onFailure` and `onSkip`, of a job or (as defaults for every job) of the config. */
export type JobHooks = Pick<ResilConfig, (typeof hookOptions)[number]>;

/** The hooks of `object` that are functions (or absent); reports any other value. */
export function hooks(object: Record<string, unknown>, report: Report): JobHooks {
  const valid: Record<string, unknown> = {};
  for (const option of hookOptions) {
    const value = object[option];
    if (value === undefined) continue;
    if (typeof value === 'function') valid[option] = value;
    else report({ option, value, message: `expected a function (event) => ..., ${got(value)}` });
  }
  return valid as JobHooks;
}

/**
 * A job's `concurrency`: a whole number >= 1, not with `overlap: 'allow-all'`; undefined when absent
 * or after reporting what is wrong with it.
 */
export function concurrency(value: unknown, overlap: unknown, report: Report): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    report({
      option: 'concurrency',
      value,
      message: `expected a whole number >= 1 (how many occurrences may run at once), ${got(value)}`,
    });
    return undefined;
  }
  if (overlap === 'allow-all') {
    report({
      option: 'concurrency',
      value,
      message:
        "does not apply with overlap: 'allow-all', which runs every occurrence at once, unbounded: remove concurrency, or bound the job with another overlap policy ('skip', 'buffer-one', 'buffer-all', 'cancel-other')",
    });
    return undefined;
  }
  return value;
}

/** The isolation `value` names, or undefined after reporting a value that is not one. */
export function isolation(value: unknown, report: Report): JobIsolation | undefined {
  if (value === undefined) return undefined;
  if (isolations.includes(value as JobIsolation)) return value as JobIsolation;
  const suggestion = typeof value === 'string' ? closestName(value, isolations) : undefined;
  report({
    option: 'isolation',
    value,
    message: `expected one of ${isolations.map((name) => `'${name}'`).join(', ')}${suggestion === undefined ? '' : ` (did you mean '${suggestion}'?)`}, ${got(value)}`,
  });
  return undefined;
}

/** The DST policy `value` names, or undefined after reporting a value that is not one. */
export function dstPolicy(value: unknown, report: Report): DstPolicy | undefined {
  if (value === undefined) return undefined;
  if (dstPolicies.includes(value as DstPolicy)) return value as DstPolicy;
  const suggestion = typeof value === 'string' ? closestName(value, dstPolicies) : undefined;
  report({
    option: 'dst',
    value,
    message: `expected one of ${dstPolicies.map((name) => `'${name}'`).join(', ')}${suggestion === undefined ? '' : ` (did you mean '${suggestion}'?)`}, ${got(value)}`,
  });
  return undefined;
}
