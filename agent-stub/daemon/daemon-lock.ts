import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { identityAlive, processIdentity } from './process-identity.js';

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether the lock's writer still runs. The lock holds `<pid>:<start time>`: after a reboot (or a
 * container restart) with the runtime dir on persistent disk, the old pid often names another
 * process, which must not keep every new daemon out. A bare pid (older builds) falls back to the pid.
 */
function ownerAlive(content: string): boolean {
  if (content.includes(':')) return identityAlive(content);
  const pid = Number(content);
  return Number.isInteger(pid) && pid > 0 && pidAlive(pid);
}

/**
 * An exclusive pid lock file (O_EXCL create). A lock whose owner is dead is stale and taken over.
 * Returns false when a live process holds it.
 */
export function acquirePidLock(path: string): boolean {
  const me = processIdentity(process.pid) ?? `${process.pid}:`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, me);
      closeSync(fd);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let owner: string;
    try {
      owner = readFileSync(path, 'utf8').trim();
    } catch {
      continue;
    }
    if (ownerAlive(owner)) return owner === me || owner === String(process.pid);
    try {
      unlinkSync(path);
    } catch {
      // another starter removed it first
    }
  }
  return false;
}

export function releasePidLock(path: string): void {
  try {
    if (Number.parseInt(readFileSync(path, 'utf8').trim(), 10) === process.pid) unlinkSync(path);
  } catch {
    // already gone
  }
}
