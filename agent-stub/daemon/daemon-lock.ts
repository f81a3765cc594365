import {
  closeSync,
  fstatSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { identityAlive, processIdentity } from '../restore/process-identity.js';

/**
 * A lock file that holds no pid and is older than this was left by a writer that died mid-write
 * (builds before the link-based create wrote the pid after creating the file); a younger one is
 * taken to be held.
 */
export const UNREADABLE_LOCK_STALE_MS = 10_000;
/** Rounds of create / inspect / remove-stale before giving up (each round another starter won). */
const ATTEMPTS = 5;
/** What a lock holds: `<pid>:<start time>` (see process-identity.ts), or a bare pid (older builds). */
const LOCK_CONTENT = /^(\d+)(?::(\d*))?$/;

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isErrno(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException)?.code === code;
}

/**
 * What a lock file holds: its pid (undefined when the content is not one), the owner's full
 * identity when it was written with one, inode and age.
 */
interface LockFile {
  pid: number | undefined;
  identity: string | undefined;
  ino: number;
  mtimeMs: number;
}

/** The lock file's content and identity read from one open file, or undefined when there is none. */
function readLock(path: string): LockFile | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
  try {
    const st = fstatSync(fd);
    const text = readFileSync(fd, 'utf8').trim();
    const m = LOCK_CONTENT.exec(text);
    const pid = m ? Number(m[1]) : 0;
    return {
      pid: pid > 0 ? pid : undefined,
      identity: pid > 0 && m?.[2] !== undefined ? text : undefined,
      ino: st.ino,
      mtimeMs: st.mtimeMs,
    };
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether the lock's writer still runs. With `<pid>:<start time>`, a pid that now names another
 * process does not count: after a reboot (or a container restart) with the runtime dir on
 * persistent disk, the old pid is often taken, which must not keep every new daemon out.
 */
function ownerAlive(pid: number, identity: string | undefined): boolean {
  return identity !== undefined ? identityAlive(identity) : pidAlive(pid);
}

/**
 * Removes the stale lock with inode `ino`. It is moved aside first and checked: if another starter
 * replaced it in the meantime, the fresh lock is put back rather than deleted.
 */
function removeStale(path: string, ino: number): void {
  const aside = `${path}.${process.pid}.stale`;
  try {
    renameSync(path, aside);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return; // another starter removed it first
    throw err;
  }
  try {
    if (readLock(aside)?.ino !== ino) linkSync(aside, path);
  } catch (err) {
    // EEXIST: a third starter created one meanwhile; theirs stands.
    if (!isErrno(err, 'EEXIST')) throw err;
  } finally {
    unlinkSync(aside);
  }
}

/**
 * An exclusive pid lock file. The file appears with its owner (`<pid>:<start time>`) already in it
 * (written to a private name, then hard-linked into place, which fails if a lock exists), so a
 * reader never sees it half-written. A lock whose owner is gone is stale and taken over. Returns
 * false when a live process holds it.
 */
export function acquirePidLock(path: string): boolean {
  const mine = `${path}.${process.pid}.tmp`;
  writeFileSync(mine, processIdentity(process.pid) ?? `${process.pid}:`, { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      try {
        linkSync(mine, path);
        return true;
      } catch (err) {
        if (!isErrno(err, 'EEXIST')) throw err;
      }
      const held = readLock(path);
      if (!held) continue;
      // Ours when it names this process; held when it names another live one.
      if (held.pid !== undefined && ownerAlive(held.pid, held.identity)) return held.pid === process.pid;
      if (held.pid === undefined && Date.now() - held.mtimeMs < UNREADABLE_LOCK_STALE_MS) return false;
      removeStale(path, held.ino);
    }
    return false;
  } finally {
    unlinkSync(mine);
  }
}

export function releasePidLock(path: string): void {
  const held = readLock(path);
  if (held?.pid !== process.pid) return;
  if (held.identity !== undefined && held.identity !== processIdentity(process.pid)) return;
  try {
    unlinkSync(path);
  } catch (err) {
    if (!isErrno(err, 'ENOENT')) throw err;
  }
}
