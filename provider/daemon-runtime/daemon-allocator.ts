/**
 * glibc malloc settings for the daemon process alone. A fixed trim threshold also fixes glibc's
 * mmap threshold at 128 KiB (setting either turns off their adjustment at run time): the feed's
 * slabs and joined batches (model-feeder.ts) then always get pages of their own, which go back to
 * the system when freed, and a heap's free top goes back past 128 KiB. Left to adjust itself,
 * glibc raised the mmap threshold to the largest buffer freed so far, and those buffers came from
 * the heaps, where they stayed. 50 idle sessions that each wrote 10 MiB: 223 MB without, 152 MB
 * with (MALLOC_ARENA_MAX=2 on top gave 168 MB: the model worker then shared
 * the main heap, its rows pinning the PTY's freed read buffers). glibc reads these variables once,
 * when the process starts; the daemon then takes them out of its environment again (and puts back
 * the user's own values), so the shells it spawns never see them.
 */
export const DAEMON_MALLOC_ENV: Readonly<Record<string, string>> = {
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
