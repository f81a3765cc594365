import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type ErrorCode, PtyRelayError } from '../errors.js';
import { STUB_DIR_SETTINGS, type StubDirKind } from './stub-paths.js';

/** What makes a stub dir unusable; retrying will not fix any of these. */
export interface StubDirProblem {
  problem: 'DIR_NOT_WRITABLE' | 'DISK_FULL' | 'DIR_NOEXEC' | 'DIR_INSECURE';
  message: string;
  errno?: string;
}

const UNWRITABLE_ERRNOS = ['EROFS', 'EACCES', 'EPERM'];
const FULL_ERRNOS = ['ENOSPC', 'EDQUOT'];
const PRIVATE_DIR_MODE = 0o700;
const PROBE_MODE = 0o700;
const PROBE_SCRIPT = '#!/bin/sh\nexit 0\n';

const WHAT: Record<StubDirProblem['problem'], string> = {
  DIR_NOT_WRITABLE: 'is not writable',
  DISK_FULL: 'is on a full file system',
  DIR_NOEXEC: 'does not allow running programs (mounted noexec)',
  DIR_INSECURE: 'can be changed by other users',
};

/**
 * The error for a stub dir that cannot be used: names the dir, what is wrong and the setting that
 * moves it (non-retryable codes: a retry would find the same).
 */
export function stubDirError(kind: StubDirKind, dir: string, p: StubDirProblem): PtyRelayError {
  const code: ErrorCode = p.problem;
  const fix = p.problem === 'DIR_INSECURE' ? 'fix it' : 'free it';
  return new PtyRelayError(
    code,
    `the stub's ${kind} dir ${dir} ${WHAT[p.problem]} (${p.errno ?? p.message}); ${fix}, or change ${STUB_DIR_SETTINGS[kind]}`,
    { dir, kind, setting: STUB_DIR_SETTINGS[kind], errno: p.errno, reason: p.message },
  );
}

function classify(e: NodeJS.ErrnoException): StubDirProblem {
  const errno = e.code ?? 'EIO';
  if (UNWRITABLE_ERRNOS.includes(errno)) return { problem: 'DIR_NOT_WRITABLE', errno, message: e.message };
  if (FULL_ERRNOS.includes(errno)) return { problem: 'DISK_FULL', errno, message: e.message };
  throw e;
}

/**
 * Creates `dir` (0700) and checks it takes a file, has `needBytes` free and (with `exec`) runs
 * programs. The same checks as the relay's `checkDir` helper op, for the dirs the stub itself
 * creates (runtime, state). Other errors (a file in the way) are thrown as they are.
 */
export function checkStubDir(dir: string, needBytes: number, exec: boolean): StubDirProblem | undefined {
  const probe = join(dir, `.ptyrelay-check-${process.pid}`);
  try {
    // One level at a time: a recursive mkdir on a read-only mount reports ENOENT, not EROFS.
    const parts = resolve(dir).split('/');
    for (let i = 2; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      if (!existsSync(p)) mkdirSync(p, { mode: PRIVATE_DIR_MODE });
    }
    writeFileSync(probe, PROBE_SCRIPT, { mode: PROBE_MODE });
  } catch (e) {
    return classify(e as NodeJS.ErrnoException);
  }
  try {
    // statfs came in node 18.15; an older node skips the space check (a write failing says it later).
    const s = typeof statfsSync === 'function' ? statfsSync(dir) : undefined;
    const free = s ? Number(s.bavail) * Number(s.bsize) : Number.POSITIVE_INFINITY;
    if (free < needBytes) return { problem: 'DISK_FULL', message: `${free} bytes free, ${needBytes} needed` };
    if (exec) {
      const r = spawnSync(probe, [], { stdio: 'ignore' });
      const errno = (r.error as NodeJS.ErrnoException | undefined)?.code;
      if (errno === 'EACCES' || errno === 'EPERM')
        return { problem: 'DIR_NOEXEC', errno, message: 'cannot run programs from it' };
    }
    return undefined;
  } finally {
    rmSync(probe, { force: true });
  }
}
