import { execFileSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bufferedChars, bufferedMs, createLogger } from '../../src/cli/logger.ts';

function capture(options: { buffered?: boolean } = {}) {
  const lines: Array<Record<string, unknown>> = [];
  /** How many lines each write to the destination carried, and its length. */
  const writes: number[] = [];
  const sizes: number[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      const parsed = chunk
        .toString()
        .split('\n')
        .filter((line: string) => line !== '')
        .map((line: string) => JSON.parse(line) as Record<string, unknown>);
      lines.push(...parsed);
      writes.push(parsed.length);
      sizes.push(chunk.toString().length);
      callback();
    },
  });
  return { lines, writes, sizes, logger: createLogger({ destination, level: 'debug', ...options }) };
}

describe('createLogger (resil run logs)', () => {
  it('writes JSON lines with the level, an ISO time, bindings and fields', () => {
    const { lines, logger } = capture();
    logger
      .child({ job: 'tick' })
      .info({ scheduledAt: '2026-01-01T00:00:00.000Z', outcome: 'success', token: 7 }, 'job succeeded');
    expect(lines).toEqual([
      expect.objectContaining({
        level: 30,
        job: 'tick',
        outcome: 'success',
        token: 7,
        msg: 'job succeeded',
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      }),
    ]);
  });

  it('never prints secrets: secret-named fields, URL passwords in messages, fields and errors', () => {
    const { lines, logger } = capture();
    const fields = {
      url: 'redis://app:hunter2@db:6379',
      options: { password: 'hunter2', connectionString: 'postgres://u:hunter2@h/d' },
      note: 'retrying redis://:hunter2@db:6379',
    };
    logger.warn(fields, 'cannot reach postgres://admin:hunter2@db/app');
    logger.error({ err: new Error('connect redis://app:hunter2@db:6379 refused') }, 'job failed');
    const text = JSON.stringify(lines);
    expect(text).not.toContain('hunter2');
    expect(lines[0]).toMatchObject({
      url: '[redacted]',
      options: { password: '[redacted]', connectionString: '[redacted]' },
      note: 'retrying redis://:[redacted]@db:6379',
      msg: 'cannot reach postgres://admin:[redacted]@db/app',
    });
    expect((lines[1]!.err as { message: string }).message).toBe(
      'connect redis://app:[redacted]@db:6379 refused',
    );
    // The caller's object is left as it was.
    expect(fields.note).toBe('retrying redis://:hunter2@db:6379');
  });

  it("never prints secrets in a child logger's bindings, nor two levels down as anything but a URL password", () => {
    const { lines, logger } = capture();
    const child = logger.child({ connectionString: 'postgres://u:hunter2@h/d', db: { password: 'hunter2' } });
    child.info({ deep: { options: { password: 'kept-two-levels-down' } } }, 'connected');
    expect(JSON.stringify(lines)).not.toContain('hunter2');
    expect(lines[0]).toMatchObject({
      connectionString: '[redacted]',
      db: { password: '[redacted]' },
      deep: { options: { password: 'kept-two-levels-down' } },
    });
  });

  it('honours the level', () => {
    const { lines, logger } = capture();
    logger.level = 'warn';
    logger.info('hidden');
    logger.warn('shown');
    expect(lines.map((line) => line.msg)).toEqual(['shown']);
  });
});

describe('createLogger({ buffered: true }) (resil run)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes the lines that came within bufferedMs together, once, that long after the first', () => {
    vi.useFakeTimers();
    const { lines, writes, logger } = capture({ buffered: true });
    logger.info('one');
    vi.advanceTimersByTime(bufferedMs / 2);
    logger.info('two');
    logger.warn('three');
    vi.advanceTimersByTime(bufferedMs / 2 - 1);
    expect(writes).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(writes).toEqual([3]);
    expect(lines.map((line) => line.msg)).toEqual(['one', 'two', 'three']);
    // Nothing waits: no timer, no empty write.
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(10 * bufferedMs);
    expect(writes).toEqual([3]);
  });

  it('writes at most bufferedChars at once, once that much waits; on flush() and a fatal line at once', () => {
    vi.useFakeTimers();
    const { lines, writes, sizes, logger } = capture({ buffered: true });
    const text = 'x'.repeat(1_000);
    let logged = 0;
    while (writes.length === 0) {
      logger.info({ text }, `line ${logged++}`);
      expect(logged).toBeLessThanOrEqual(Math.ceil(bufferedChars / text.length) + 1);
    }
    // The line that would have made the write longer than bufferedChars waits for the next one.
    expect(writes).toEqual([logged - 1]);
    expect(sizes[0]).toBeLessThanOrEqual(bufferedChars);
    expect(sizes[0]! + text.length).toBeGreaterThan(bufferedChars);
    logger.info('after');
    logger.flush();
    expect(writes).toEqual([logged - 1, 2]);
    logger.info('before the fatal line');
    logger.fatal('fatal');
    expect(writes).toEqual([logged - 1, 2, 2]);
    expect(lines.map((line) => line.msg).slice(-2)).toEqual(['before the fatal line', 'fatal']);
    // A line longer than bufferedChars goes out alone.
    logger.info({ text: 'y'.repeat(2 * bufferedChars) }, 'long');
    expect(writes.at(-1)).toBe(1);
    expect(sizes.at(-1)).toBeGreaterThan(2 * bufferedChars);
  });

  it('writes what waits when the process exits (process.exit(), an uncaught error, the end of the event loop), and what is logged on exit', () => {
    const logger = fileURLToPath(new URL('../../src/cli/logger.ts', import.meta.url));
    const ends = {
      'process.exit()': 'process.exit(3);',
      'an uncaught error': "throw new Error('boom');",
      'the end of the event loop': '',
    };
    for (const [end, code] of Object.entries(ends)) {
      const script = `const { createLogger } = await import(${JSON.stringify(logger)});
const logger = createLogger({ buffered: true });
for (let index = 0; index < 4; index++) logger.info({ index }, 'line');
process.on('exit', () => logger.info({ index: 4 }, 'exiting'));
${code}`;
      let stdout: string;
      try {
        stdout = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        });
      } catch (error) {
        stdout = (error as { stdout: string }).stdout;
      }
      const indexes = stdout
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => (JSON.parse(line) as { index: number }).index);
      expect(indexes, end).toEqual([0, 1, 2, 3, 4]);
    }
  });
});
