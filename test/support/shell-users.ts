/**
 * Throwaway login users for the "hosts as they are" tests (root only): a given login shell and
 * rc files that print on every start. Created under the same flock as the sshd harness (shadow-utils
 * races otherwise); {@link removeShellUser} kills their processes by pid and deletes user and home.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { basename, dirname, join } from 'node:path';
import { allOf, type Capability, capability, filesMissing, rootAvailable } from './capabilities.js';

/** Every user these tests create starts with this, so a leftover is easy to spot (and remove). */
export const T21_USER_PREFIX = 'ptyrelay-t21-';

const FLOCK_PATH = '/usr/bin/flock';
/** Same lock file as test/support/sshd.ts. */
const USERADD_LOCK_PATH = join(os.tmpdir(), 'ptyrelay-useradd.lock');
const KILL_WAIT_MS = 2000;
const POLL_MS = 25;

export interface ShellUser {
  name: string;
  home: string;
  uid: number;
  gid: number;
  shell: string;
}

function locked(script: string, ...args: string[]): void {
  const pre = fs.existsSync(FLOCK_PATH) ? [FLOCK_PATH, USERADD_LOCK_PATH] : [];
  const cmd = [...pre, '/bin/sh', '-ec', script, 'sh', ...args];
  const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${script.split('\n')[0]} failed: ${r.stderr}`);
}

/**
 * Creates (or resets) `<prefix><suffix>` (default prefix `ptyrelay-t21-`) with `shell` as login shell, an unlocked password
 * field (key logins) and `rcFiles` (path relative to home → content) owned by the user.
 */
export function createShellUser(
  suffix: string,
  shell: string,
  rcFiles: Record<string, string>,
  prefix = T21_USER_PREFIX,
): ShellUser {
  const name = `${prefix}${suffix}`;
  locked(
    [
      'getent passwd "$1" >/dev/null || useradd -m -s "$2" -p "*" "$1" || [ $? -eq 9 ]',
      'usermod -s "$2" -p "*" "$1"',
    ].join('\n'),
    name,
    shell,
  );
  const [, , uid, gid, , home] = spawnSync('getent', ['passwd', name], { encoding: 'utf8' })
    .stdout.trim()
    .split(':');
  const user = { name, home: home!, uid: Number(uid), gid: Number(gid), shell };
  for (const [rel, content] of Object.entries(rcFiles)) {
    const path = join(user.home, rel);
    fs.mkdirSync(dirname(path), { recursive: true });
    fs.writeFileSync(path, content);
    for (let p = path; p !== user.home; p = dirname(p)) fs.chownSync(p, user.uid, user.gid);
  }
  return user;
}

/** Pids of live processes running as `uid`. */
function processesOf(uid: number): number[] {
  const pids: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let status: string;
    try {
      status = fs.readFileSync(`/proc/${name}/status`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    const state = /^State:\s+(\S)/m.exec(status)?.[1];
    if (Number(real) === uid && state !== 'Z') pids.push(Number(name));
  }
  return pids;
}

/** Kills the user's processes (daemons the tests started) by pid, then removes user and home. */
export async function removeShellUser(user: ShellUser): Promise<void> {
  const deadline = Date.now() + KILL_WAIT_MS;
  for (let pids = processesOf(user.uid); pids.length > 0; pids = processesOf(user.uid)) {
    for (const pid of pids) {
      try {
        process.kill(pid, Date.now() < deadline ? 'SIGTERM' : 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  locked('userdel -r "$1" 2>/dev/null || userdel "$1"; rm -rf "$2"', user.name, user.home);
}

/** The capability a program these suites run belongs to, by file name; any other is one of `shells`. */
const CAPABILITY_OF: Record<string, Capability> = {
  bash: 'bash',
  zsh: 'zsh',
  'sftp-server': 'sshd',
  mount: 'mount',
  umount: 'mount',
};

/**
 * Whether the programs at `paths` are installed: one {@link capability} per capability they belong
 * to (bash, zsh, sshd for sftp-server, mount, else shells), each printing what is missing or
 * throwing when required.
 */
export function programsAvailable(paths: readonly string[]): boolean {
  const byCapability = new Map<Capability, string[]>();
  for (const p of paths) {
    const name = CAPABILITY_OF[basename(p)] ?? 'shells';
    byCapability.set(name, [...(byCapability.get(name) ?? []), p]);
  }
  return allOf(...[...byCapability].map(([name, ps]) => capability(name, filesMissing(ps))));
}

/**
 * Whether these tests can create users (capability `root`) and the programs at `paths` exist (see
 * {@link programsAvailable}). Each missing capability is already printed (or thrown, when required)
 * here; `reason` repeats what is missing for callers that say more.
 */
export function shellUsersAvailable(paths: readonly string[]): { ok: boolean; reason?: string } {
  const root = rootAvailable('creating login users');
  const programs = programsAvailable(paths);
  if (root && programs) return { ok: true };
  const absent = filesMissing(paths);
  return { ok: false, reason: !root ? 'creating login users needs root' : absent };
}
