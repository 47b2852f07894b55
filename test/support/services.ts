/**
 * How tests find a shared PostgreSQL or Redis: the URL in an environment variable, else a private
 * server this test process starts, else `undefined` after printing why, so the suite skips. Under
 * `RESIL_REQUIRE_SERVICES=1` (CI) a missing service fails instead of skipping.
 */

export interface SharedService {
  /** Names the service in the skip message: `PostgreSQL`, `Redis`. */
  readonly name: string;
  /** The environment variable that gives the URL: `DATABASE_URL`, `REDIS_URL`. */
  readonly urlVariable: string;
  /** The server binary, named when it fails to start. */
  readonly binary: string;
  /** Why no private server can be started (`redis-server is not on PATH`), or `undefined`. */
  readonly missing: () => string | undefined;
  /** Starts a private server and resolves to its URL. */
  readonly start: () => Promise<string>;
}

/** The service's URL, or `undefined` (after printing why) when tests of it must skip. */
export async function sharedServiceUrl(service: SharedService): Promise<string | undefined> {
  const fromEnv = process.env[service.urlVariable];
  if (fromEnv) return fromEnv;
  const skipped = `${service.name} tests skipped:`;
  const missing = service.missing();
  if (missing !== undefined)
    return skipOrFail(`${skipped} ${service.urlVariable} is not set and ${missing}.`);
  try {
    return await service.start();
  } catch (error) {
    return skipOrFail(`${skipped} could not start ${service.binary}: ${(error as Error).message}.`);
  }
}

/** Prints `message` and returns `undefined`, so the caller skips; throws instead under RESIL_REQUIRE_SERVICES=1. */
export function skipOrFail(message: string): undefined {
  if (process.env.RESIL_REQUIRE_SERVICES === '1') {
    throw new Error(`${message} RESIL_REQUIRE_SERVICES=1 makes this a failure.`);
  }
  console.warn(message);
  return undefined;
}
