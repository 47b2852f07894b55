import { MemoryLockStore, type TelemetryEvent } from 'resil';
import { openTelemetry } from 'resil/opentelemetry';
import {
  createScheduler,
  isConfigError,
  type SchedulerEvent,
  type SchedulerTelemetry,
} from 'resil/scheduler';
import { FakeTimeProvider } from 'resil/testing';
import { describe, expect, it } from 'vitest';

const run = async () => {};

/** The problems `createScheduler()` reports for `telemetry`, one line each. */
function problemsOf(telemetry: unknown, jobs = [{ name: 'a', schedule: '* * * * *', run }]): string[] {
  try {
    createScheduler({ telemetry: telemetry as SchedulerTelemetry, jobs });
  } catch (error) {
    if (!isConfigError(error)) throw error;
    return error.message.split('\n');
  }
  throw new Error('createScheduler() accepted the config');
}

describe('the config option telemetry', () => {
  it('accepts openTelemetry() and a plain object with either member', () => {
    expect(() => createScheduler({ telemetry: openTelemetry(), jobs: [] })).not.toThrow();
    expect(() => createScheduler({ telemetry: { onSchedulerEvent() {} }, jobs: [] })).not.toThrow();
    expect(() =>
      createScheduler({
        telemetry: { pipelineListener: () => undefined },
        jobs: [{ name: 'a', schedule: '* * * * *', run }],
      }),
    ).not.toThrow();
  });

  it('rejects what is not a telemetry object, naming the option and the value', () => {
    const file = 'createScheduler() options';
    expect(problemsOf('otel')).toEqual([
      `${file}: option "telemetry": expected a telemetry object such as openTelemetry({ tracer, meter }) from resil/opentelemetry, got "otel"`,
    ]);
    expect(problemsOf({ onSchedulerEvnt() {} })).toEqual([
      `${file}: option "telemetry.onSchedulerEvnt": unknown option (did you mean "telemetry.onSchedulerEvent"?); known options: pipelineListener, onSchedulerEvent, flush`,
      `${file}: option "telemetry": expected pipelineListener(job) and/or onSchedulerEvent(event), as openTelemetry({ tracer, meter }) from resil/opentelemetry has; got neither`,
    ]);
    expect(problemsOf({ pipelineListener: 3 })).toEqual([
      `${file}: option "telemetry.pipelineListener": expected a function, got 3`,
    ]);
    expect(problemsOf((event: TelemetryEvent) => event)).toEqual([
      `${file}: option "telemetry": expected pipelineListener(job) and/or onSchedulerEvent(event), as openTelemetry({ tracer, meter }) from resil/opentelemetry has; a function alone is a pipeline's listener (new PipelineBuilder({ telemetry }))`,
    ]);
  });

  it("rejects a pipelineListener that returns no listener, or throws, on the job's line", () => {
    const file = 'createScheduler() options';
    expect(problemsOf({ pipelineListener: () => 'listener' })).toEqual([
      `${file}: job "a": option "telemetry.pipelineListener": expected it to return a telemetry listener function (or undefined) for job "a", got "listener"`,
    ]);
    expect(
      problemsOf({
        pipelineListener: () => {
          throw new Error('no meter for redis://u:hunter2@host');
        },
      }),
    ).toEqual([
      `${file}: job "a": option "telemetry.pipelineListener": threw for job "a": Error: no meter for redis://u:[redacted]@host`,
    ]);
  });

  it('any SchedulerTelemetry works: one listener per job by name, and every scheduler event', async () => {
    const time = new FakeTimeProvider(Date.parse('2026-03-01T01:59:59.000Z'));
    const asked: string[] = [];
    const pipelineEvents: string[] = [];
    const executions: string[] = [];
    const schedulerEvents: SchedulerEvent[] = [];
    const subscribed: SchedulerEvent[] = [];
    let calls = 0;
    const scheduler = createScheduler({
      store: new MemoryLockStore({ timeProvider: time }),
      timeProvider: time,
      timezone: 'UTC',
      telemetry: {
        pipelineListener(job) {
          asked.push(job);
          return Object.assign((event: TelemetryEvent) => pipelineEvents.push(`${job}:${event.event}`), {
            onPipelineExecuted: () => executions.push(job),
          });
        },
        onSchedulerEvent: (event) => schedulerEvents.push(event),
      },
      jobs: [
        {
          name: 'flaky',
          schedule: '0 2 * * *',
          retry: { maxRetryAttempts: 1, delay: 0 },
          run: () => {
            if (++calls === 1) throw new Error('once');
          },
        },
        { name: 'quiet', schedule: '0 3 * * *', run },
      ],
    });
    scheduler.on((event) => subscribed.push(event));
    await scheduler.start();
    await time.advance(1_000);
    await scheduler.stop();
    expect(asked).toEqual(['flaky', 'quiet']);
    expect(pipelineEvents).toEqual(['flaky:OnRetry']);
    expect(executions).toEqual(['flaky']);
    expect(schedulerEvents.map((event) => event.type)).toEqual(['started', 'retrying', 'succeeded']);
    expect(schedulerEvents).toEqual(subscribed);
  });
});
