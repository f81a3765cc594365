import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** A relay killed while it was starting a daemon may still spawn it: look this long for late ones. */
const LATE_DAEMON_MS = 2000;
const POLL_MS = 100;

/** Ends a child process and waits until it has exited (so it starts nothing more). */
export async function endProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/** Pids of stub daemons started with `--runtime-dir <runtimeDir>` (and of their launch wrappers). */
export function daemonsOf(runtimeDir: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch (err) {
      // Exited meanwhile: gone (ENOENT), or exiting while its cmdline was read (ESRCH).
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ESRCH') continue;
      throw err;
    }
    const at = argv.indexOf('--runtime-dir');
    if (argv.includes('daemon') && at >= 0 && argv[at + 1] === runtimeDir) pids.push(Number(name));
  }
  return pids;
}

/**
 * Kills every daemon of a test's runtime dir (their sessions get SIGHUP as the PTYs close),
 * including one a relay spawned just before it was killed. Call after the relay has exited.
 */
export async function killDaemonsOf(runtimeDir: string): Promise<void> {
  const until = Date.now() + LATE_DAEMON_MS;
  do {
    for (const pid of daemonsOf(runtimeDir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  } while (Date.now() < until || daemonsOf(runtimeDir).length > 0);
}
