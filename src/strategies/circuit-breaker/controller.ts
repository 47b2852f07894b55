import type { ResilienceContext } from '../../pipeline/context.ts';
import { parseDuration } from '../../pipeline/duration.ts';
import type { ResilienceError } from '../../pipeline/errors.ts';
import { Outcome } from '../../pipeline/outcome.ts';
import type { StrategyEnvironment } from '../../pipeline/strategy.ts';
import type { CircuitBehavior } from './behavior.ts';
import { BrokenCircuitError, IsolatedCircuitError } from './errors.ts';
import type {
  CircuitBreakerStrategyOptions,
  CircuitState,
  OnCircuitClosedArguments,
  OnCircuitHalfOpenedArguments,
  OnCircuitOpenedArguments,
} from './options.ts';

type Handlers = Pick<
  CircuitBreakerStrategyOptions,
  'breakDurationGenerator' | 'onOpened' | 'onClosed' | 'onHalfOpened'
>;

const ignore = () => {};

/**
 * The circuit's state and its transitions (Polly's CircuitStateController). Open -> half-open is
 * decided lazily by the next execution after the break, so an idle breaker holds no timer.
 *
 * Transitions happen synchronously; the user's `onOpened` / `onHalfOpened` / `onClosed` calls are
 * chained so they run in transition order even when one is slow, and the execution that caused a
 * transition gets that call's promise to wait for.
 */
export class CircuitController {
  #state: CircuitState = 'closed';
  /** Monotonic instant before which no probe is let through (open, or half-open with a probe running). */
  #blockedUntil = 0;
  #lastHandledOutcome: Outcome<unknown, unknown> | undefined;
  #halfOpenAttempts = 0;
  #pendingEvent: Promise<void> | undefined;
  #eventsTail: Promise<void> = Promise.resolve();
  readonly #breakDuration: number;
  readonly #behavior: CircuitBehavior;
  readonly #handlers: Handlers;
  readonly #environment: StrategyEnvironment;

  constructor(
    breakDuration: number,
    behavior: CircuitBehavior,
    handlers: Handlers,
    environment: StrategyEnvironment,
  ) {
    this.#breakDuration = breakDuration;
    this.#behavior = behavior;
    this.#handlers = handlers;
    this.#environment = environment;
  }

  get state(): CircuitState {
    return this.#state;
  }

  /** The last outcome counted as a failure since the circuit last closed. */
  get lastHandledOutcome(): Outcome<unknown, unknown> | undefined {
    return this.#lastHandledOutcome;
  }

  /**
   * Before an execution: `false` to run it, `true` to run it as the half-open probe, or the error
   * that rejects it. Going half-open queues `onHalfOpened`: fetch it with {@link takeEvent}.
   */
  admit(context: ResilienceContext): boolean | ResilienceError {
    const state = this.#state;
    if (state === 'closed') return false;
    if (state === 'isolated') return new IsolatedCircuitError();
    const now = this.#environment.timeProvider.monotonic();
    if (now >= this.#blockedUntil) {
      // One probe per break duration: a probe that hangs longer frees the slot for the next
      // execution instead of keeping the circuit half-open for ever.
      this.#blockedUntil = now + this.#breakDuration;
      if (state === 'open') {
        this.#halfOpenAttempts++;
        this.#state = 'half-open';
        const args: OnCircuitHalfOpenedArguments = { context };
        this.#environment.report('OnCircuitHalfOpened', context, args);
        if (this.#handlers.onHalfOpened)
          this.#pendingEvent = this.#enqueue(this.#handlers.onHalfOpened, args);
      }
      return true;
    }
    const cause = this.#lastHandledOutcome?.ok === false ? this.#lastHandledOutcome.error : undefined;
    return new BrokenCircuitError(Math.ceil(this.#blockedUntil - now), cause === undefined ? {} : { cause });
  }

  /** The `onHalfOpened` call queued by the last {@link admit}, if any. */
  takeEvent(): Promise<void> | undefined {
    const event = this.#pendingEvent;
    this.#pendingEvent = undefined;
    return event;
  }

  /**
   * Counts an execution's outcome and applies its transition: a handled failure re-opens a
   * half-open circuit or breaks a closed one when the behavior says so; anything else closes a
   * half-open circuit. Returns the queued `onOpened` / `onClosed` call, if any.
   */
  record(
    outcome: Outcome<unknown, unknown>,
    handled: boolean,
    context: ResilienceContext,
  ): Promise<void> | undefined {
    const state = this.#state;
    if (!handled) {
      this.#behavior.onUnhandledOutcome(state);
      return state === 'half-open' ? this.shut(outcome, false, context) : undefined;
    }
    this.#lastHandledOutcome = outcome;
    const shouldBreak = this.#behavior.onHandledOutcome(state);
    return state === 'half-open' || (state === 'closed' && shouldBreak)
      ? this.open(outcome, context)
      : undefined;
  }

  /**
   * The probe ended without telling anything about health (its caller aborted it, or
   * `onHalfOpened` failed): the circuit stays half-open and the next execution probes.
   */
  releaseProbe(): void {
    if (this.#state === 'half-open') this.#blockedUntil = this.#environment.timeProvider.monotonic();
  }

  /** Holds the circuit open until {@link close}. */
  isolate(context: ResilienceContext): Promise<void> {
    if (this.#state === 'isolated') return Promise.resolve();
    this.#lastHandledOutcome = Outcome.failure(new IsolatedCircuitError());
    this.#state = 'isolated';
    this.#blockedUntil = Number.POSITIVE_INFINITY;
    const args: OnCircuitOpenedArguments = {
      context,
      outcome: undefined,
      breakDuration: Number.POSITIVE_INFINITY,
      isManual: true,
    };
    this.#environment.report('OnCircuitOpened', context, args);
    return this.#handlers.onOpened ? this.#enqueue(this.#handlers.onOpened, args) : Promise.resolve();
  }

  /** Closes the circuit and resets its statistics. */
  close(context: ResilienceContext): Promise<void> {
    return this.shut(undefined, true, context) ?? Promise.resolve();
  }

  /**
   * @internal Opens the circuit for `breakDuration` (by default the generated one). Public, like
   * {@link shut} and {@link breakFor}, for the fleet-wide controller that extends this one.
   */
  open(
    outcome: Outcome<unknown, unknown> | undefined,
    context: ResilienceContext,
    breakDuration = this.breakFor(context),
  ): Promise<void> | undefined {
    this.#blockedUntil = this.#environment.timeProvider.monotonic() + breakDuration;
    this.#state = 'open';
    const args: OnCircuitOpenedArguments = { context, outcome, breakDuration, isManual: false };
    this.#environment.report('OnCircuitOpened', context, args);
    return this.#handlers.onOpened ? this.#enqueue(this.#handlers.onOpened, args) : undefined;
  }

  /** @internal Closes the circuit; see {@link open}. */
  shut(
    outcome: Outcome<unknown, unknown> | undefined,
    isManual: boolean,
    context: ResilienceContext,
  ): Promise<void> | undefined {
    const prior = this.#state;
    this.#state = 'closed';
    this.#blockedUntil = 0;
    this.#lastHandledOutcome = undefined;
    this.#halfOpenAttempts = 0;
    this.#behavior.onCircuitClosed();
    if (prior === 'closed') return undefined;
    const args: OnCircuitClosedArguments = { context, outcome, isManual };
    this.#environment.report('OnCircuitClosed', context, args);
    return this.#handlers.onClosed ? this.#enqueue(this.#handlers.onClosed, args) : undefined;
  }

  /** @internal The break duration for an opening now: `breakDurationGenerator`'s, else `breakDuration`. */
  breakFor(context: ResilienceContext): number {
    const generator = this.#handlers.breakDurationGenerator;
    if (!generator) return this.#breakDuration;
    try {
      const { failureRate, failureCount } = this.#behavior.healthInfo();
      const generated = generator({
        failureRate,
        failureCount,
        halfOpenAttempts: this.#halfOpenAttempts,
        context,
      });
      return parseDuration(generated, 'circuitBreaker.breakDurationGenerator()');
    } catch {
      // A broken generator must not stop the circuit from opening.
      return this.#breakDuration;
    }
  }

  #enqueue<A>(handler: (args: A) => void | PromiseLike<void>, args: A): Promise<void> {
    const call = this.#eventsTail.then(() => handler(args));
    this.#eventsTail = call.then(ignore, ignore);
    return call;
  }
}
