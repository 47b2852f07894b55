import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/cli/logger.ts';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      callback();
    },
  });
  return { lines, logger: createLogger({ destination, level: 'debug' }) };
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
