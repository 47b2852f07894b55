import { stripVTControlCharacters } from 'node:util';

/** Text styles for human output. Identity functions when colour is off. */
export interface Styles {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

/**
 * Colour only on a terminal, never under `NO_COLOR` (https://no-color.org) or `TERM=dumb`;
 * `FORCE_COLOR` (non-zero) forces it on, like most CLIs.
 */
export function shouldColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '') return env.FORCE_COLOR !== '0';
  if (env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

function ansi(open: number, close: number): (text: string) => string {
  return (text) => `\u001b[${open}m${text}\u001b[${close}m`;
}

const plain = (text: string) => text;

export function createStyles(enabled: boolean): Styles {
  if (!enabled) {
    return { enabled, bold: plain, dim: plain, red: plain, green: plain, yellow: plain, cyan: plain };
  }
  return {
    enabled,
    bold: ansi(1, 22),
    dim: ansi(2, 22),
    red: ansi(31, 39),
    green: ansi(32, 39),
    yellow: ansi(33, 39),
    cyan: ansi(36, 39),
  };
}

/**
 * Every C0 control character but the newline, DEL, every C1 control character, and the escape
 * sequences {@link createStyles} writes (matched first, so that they are kept).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const controlOrStyle = /\u001b\[(?:1|2|22|31|32|33|36|39)m|[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;

/**
 * `text` as it may reach a terminal: each control character (an error or pause reason read from
 * the store may carry `\u001b[2J`, or an OSC title sequence) shown as its escape, `\u001b`, so
 * that it is seen instead of obeyed. Kept: newlines and the colours of {@link createStyles}.
 *
 * @example
 * printable('boom\u001b]0;owned\u0007'); // 'boom\\u001b]0;owned\\u0007'
 */
export function printable(text: string): string {
  return text.replace(controlOrStyle, (match) =>
    match.length > 1 ? match : `\\u${match.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Where a command writes text. */
export interface TextOutput {
  write(text: string): boolean;
}

/**
 * `stream`, with everything written to it made {@link printable}: every command writes through
 * it, so no text from the store, a job or the config reaches the terminal raw.
 */
export function printableOutput(stream: NodeJS.WritableStream): TextOutput {
  return { write: (text) => stream.write(printable(text)) };
}

function visibleLength(text: string): number {
  return stripVTControlCharacters(text).length;
}

/** Rows padded into aligned columns (two spaces apart); colour codes do not count as width. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) =>
    Math.max(visibleLength(title), ...rows.map((row) => visibleLength(row[column] ?? ''))),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) =>
        column === cells.length - 1 ? cell : cell + ' '.repeat(widths[column]! - visibleLength(cell)),
      )
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
