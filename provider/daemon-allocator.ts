/**
 * glibc malloc settings for the daemon process alone. A daemon that served a burst of output
 * keeps the freed memory: glibc returns only the top of each heap, and by default lets every
 * thread (the model worker, V8's helpers) grow an arena of its own. Fewer arenas and a fixed trim
 * threshold give more of it back (docs/benchmarks.md, issue 19). glibc reads these variables once,
 * when the process starts; the daemon then takes them out of its environment again (and puts back
 * the user's own values), so the shells it spawns never see them.
 */
export const DAEMON_MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_TRIM_THRESHOLD_: '131072',
};

/** The user's values of the variables above (JSON, absent ones left out), for the daemon to restore. */
const SAVED_ENV = 'PTYRELAY_USER_MALLOC_ENV';

/** The environment to start the daemon with: the caller's, plus the allocator settings. */
export function daemonProcessEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const saved: Record<string, string> = {};
  for (const k of Object.keys(DAEMON_MALLOC_ENV)) {
    const v = env[k];
    if (v !== undefined) saved[k] = v;
  }
  return { ...env, ...DAEMON_MALLOC_ENV, [SAVED_ENV]: JSON.stringify(saved) };
}

/**
 * In the daemon, first thing: the allocator settings leave the environment and the user's own
 * values come back, so that nothing the daemon spawns inherits them. A daemon started some other
 * way (no saved record) keeps its environment as it is.
 */
export function restoreUserMallocEnv(env: NodeJS.ProcessEnv = process.env): void {
  const raw = env[SAVED_ENV];
  if (raw === undefined) return;
  delete env[SAVED_ENV];
  let saved: unknown;
  try {
    saved = JSON.parse(raw);
  } catch {
    saved = {}; // not written by our launcher: nothing of the user's to put back
  }
  const record = typeof saved === 'object' && saved !== null ? (saved as Record<string, unknown>) : {};
  for (const k of Object.keys(DAEMON_MALLOC_ENV)) {
    const v = record[k];
    if (typeof v === 'string') env[k] = v;
    else delete env[k];
  }
}
