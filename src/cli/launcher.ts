/**
 * `npx resil run` and `npm start` put npm between the supervisor and resil: on SIGTERM (what
 * `docker stop`, systemd and Kubernetes send) npm exits at once without passing the signal on, and
 * resil is left behind, reparented, still firing jobs and holding leases. Only npm is watched: a
 * runner started from a shell with `nohup resil run &` is meant to outlive that shell.
 */

/** How often the parent pid is checked: a stop is noticed within this, plus the graceful stop. */
export const launcherCheckMs = 1_000;

let parentAtStart: number | undefined;

/**
 * Notes the parent pid as the CLI starts (`parentPid`, read by bin/resil.js before the CLI's
 * modules load, else now), before anything is printed. A supervisor may stop npm as soon as resil
 * says it is ready, and npm may be gone before the watch below starts: the watch compares with
 * this pid, so a launcher that exited meanwhile is still noticed.
 */
export function rememberLauncher(parentPid: number = process.ppid): void {
  parentAtStart ??= parentPid;
}

/** The launcher's name when this process was started by a package manager's run-script or exec, else undefined. */
export function packageManagerLauncher(env: NodeJS.ProcessEnv = process.env): string | undefined {
  // npm (and pnpm, yarn) set these for the scripts and `exec` commands they run.
  if (env.npm_command !== undefined) return `npm ${env.npm_command}`;
  if (env.npm_lifecycle_event !== undefined) return `npm run ${env.npm_lifecycle_event}`;
  return undefined;
}

export interface WatchLauncherOptions {
  env?: NodeJS.ProcessEnv;
  intervalMs?: number;
  /** The current parent pid. Defaults to `process.ppid`. */
  parentPid?: () => number;
}

/**
 * Calls `onGone` once when the process that started this one has exited (the parent pid is no
 * longer the one it started with, as the process is reparented), if a package manager launched
 * it: at the first check if it is gone already. Returns the function that stops watching. The
 * timer never keeps the process alive.
 */
export function watchLauncher(
  onGone: (launcher: string) => void,
  options: WatchLauncherOptions = {},
): () => void {
  const launcher = packageManagerLauncher(options.env);
  if (launcher === undefined) return () => {};
  const parentPid = options.parentPid ?? (() => process.ppid);
  // The parent the process started with (see rememberLauncher), else the one it has now.
  const first = parentAtStart ?? parentPid();
  const timer = setInterval(() => {
    if (parentPid() === first) return;
    clearInterval(timer);
    onGone(launcher);
  }, options.intervalMs ?? launcherCheckMs);
  timer.unref();
  return () => clearInterval(timer);
}
