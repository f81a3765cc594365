import { lstatSync, realpathSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { PtyRelayError } from '../errors.js';
import { STUB_DIR_SETTINGS } from './stub-paths.js';

/**
 * The daemon's runtime dir and socket are its only access control: Node has no SO_PEERCRED, so
 * whoever can connect to the socket drives every terminal. Another uid must get EACCES, so the
 * dir must be this user's and 0700, its socket 0600, and no dir above it may let another user
 * swap it (writable by others without the sticky bit, or owned by someone other than root or us).
 */

const GROUP_OTHER_BITS = 0o077;
const GROUP_OTHER_WRITE = 0o022;
const STICKY = 0o1000;
const ROOT_UID = 0;

function me(): number {
  return process.getuid?.() ?? -1;
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
}

/** What is wrong with a path that must be private, and the command that fixes it. */
export interface PrivacyProblem {
  path: string;
  reason: string;
  fix: string;
}

function ownerProblem(path: string, st: Stats, what: string): PrivacyProblem | undefined {
  if (st.uid === me()) return undefined;
  return {
    path,
    reason: `${what} ${path} is owned by uid ${st.uid}, not by you (uid ${me()})`,
    fix: `use a dir of your own`,
  };
}

/** Ancestors of `dir` (its real path) that another user could use to replace it. */
function ancestorProblem(real: string): PrivacyProblem | undefined {
  for (let p = dirname(real); ; p = dirname(p)) {
    const st = lstatSync(p);
    if (st.uid !== ROOT_UID && st.uid !== me()) {
      return {
        path: p,
        reason: `${p} (above ${real}) is owned by uid ${st.uid}`,
        fix: 'use a dir of your own',
      };
    }
    if ((st.mode & GROUP_OTHER_WRITE) !== 0 && (st.mode & STICKY) === 0) {
      return {
        path: p,
        reason: `${p} (above ${real}) is mode ${octal(st.mode)}: others could replace what is below it`,
        fix: `chmod go-w ${p}`,
      };
    }
    if (p === dirname(p)) return undefined;
  }
}

/** Whether `dir` (which exists) is a private dir of this user; undefined when it is. */
export function privateDirProblem(dir: string): PrivacyProblem | undefined {
  const st = lstatSync(dir);
  const real = st.isSymbolicLink() ? realpathSync(dir) : dir;
  const target = real === dir ? st : lstatSync(real);
  if (!target.isDirectory()) return { path: dir, reason: `${dir} is not a directory`, fix: `remove ${dir}` };
  const owner = ownerProblem(dir, target, 'the dir');
  if (owner) return owner;
  if ((target.mode & GROUP_OTHER_BITS) !== 0) {
    return {
      path: dir,
      reason: `${dir} is mode ${octal(target.mode)}, must be 0700`,
      fix: `chmod 700 ${dir}`,
    };
  }
  return ancestorProblem(real);
}

/** Whether the socket at `path` is this user's and 0600; undefined when it is (or when it is absent). */
export function privateSocketProblem(path: string): PrivacyProblem | undefined {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (!st.isSocket()) return { path, reason: `${path} is not a socket`, fix: `remove ${path}` };
  const owner = ownerProblem(path, st, 'the socket');
  if (owner) return owner;
  if ((st.mode & GROUP_OTHER_BITS) !== 0) {
    return { path, reason: `${path} is mode ${octal(st.mode)}, must be 0600`, fix: `chmod 600 ${path}` };
  }
  return undefined;
}

/** DIR_INSECURE for the stub's runtime dir (or its socket): what is wrong, the fix, the setting. */
export function insecureRuntimeError(runtimeDir: string, p: PrivacyProblem): PtyRelayError {
  const setting = STUB_DIR_SETTINGS.runtime;
  return new PtyRelayError(
    'DIR_INSECURE',
    `the stub's runtime dir is not private: ${p.reason}; fix: ${p.fix}, or change ${setting}`,
    { dir: runtimeDir, kind: 'runtime', path: p.path, fix: p.fix, setting },
  );
}

/** Throws DIR_INSECURE unless `runtimeDir` and (when present) `socketPath` in it are private. */
export function assertPrivateRuntime(runtimeDir: string, socketPath?: string): void {
  const p = privateDirProblem(runtimeDir) ?? (socketPath ? privateSocketProblem(socketPath) : undefined);
  if (p) throw insecureRuntimeError(runtimeDir, p);
}
