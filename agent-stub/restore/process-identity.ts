import { existsSync, readFileSync } from 'node:fs';

/** Field 22 of /proc/<pid>/stat (the start time in clock ticks since boot), counted after `comm`. */
const STARTTIME_FIELD_AFTER_COMM = 19;
const HAS_PROC = existsSync('/proc/self/stat');

/**
 * `<pid>:<start time>` of a running process (undefined for one that exited, zombies included): unlike the pid alone, it never names another process later
 * (a container that restarts hands out the same small pids again). Without /proc (macOS) the
 * start time is empty and liveness falls back to the pid.
 */
export function processIdentity(pid: number): string | undefined {
  if (!HAS_PROC) return pidAlive(pid) ? `${pid}:` : undefined;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // A zombie (killed, not yet reaped by its parent) runs no more: a daemon killed with its host's
  // power must not count as alive while its launcher has not waited for it yet.
  if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
  return `${pid}:${fields[STARTTIME_FIELD_AFTER_COMM] ?? ''}`;
}

/** Whether the process named by a {@link processIdentity} still runs. */
export function identityAlive(owner: string): boolean {
  const pid = Number(owner.slice(0, owner.indexOf(':')));
  if (!Number.isInteger(pid) || pid <= 0) return false;
  return processIdentity(pid) === owner;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
