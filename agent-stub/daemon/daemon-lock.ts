import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * An exclusive pid lock file (O_EXCL create). A lock whose owner is dead is stale and taken over.
 * Returns false when a live process holds it.
 */
export function acquirePidLock(path: string): boolean {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let owner = Number.NaN;
    try {
      owner = Number(readFileSync(path, 'utf8').trim());
    } catch {
      continue;
    }
    if (Number.isInteger(owner) && owner > 0 && pidAlive(owner)) return owner === process.pid;
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
    if (Number(readFileSync(path, 'utf8').trim()) === process.pid) unlinkSync(path);
  } catch {
    // already gone
  }
}
