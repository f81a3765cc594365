/**
 * Helpers for the stub deployment tests: ssh2 connections to a harness sshd, and a login user whose
 * PATH (plain and login shell) has no node.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { Client } from 'ssh2';
import type { SshdInstance } from './sshd.js';

/** Login user of the deployment tests: its ~/.cache/ptyrelay belongs to them alone. */
export const DEPLOY_TEST_USER = 'ptyrelay-deploy';
/** A user with /bin/sh as shell and `PATH=/nonexistent` everywhere, so no node is found. */
export const NO_NODE_USER = 'ptyrelay-nonode';
/** Dir in {@link NO_NODE_USER}'s home where a test plays nvm (a `bin/node` symlink). */
export const FAKE_NVM_DIR = '.fake-nvm';
/** sshd_config line that gives {@link NO_NODE_USER}'s exec commands a PATH without /usr/bin. */
export const NO_NODE_SSHD_CONFIG = ['SetEnv PATH=/nonexistent'];

const FLOCK_PATH = '/usr/bin/flock';
/** Same lock file as test/support/sshd.ts: concurrent useradd runs race inside shadow-utils. */
const USERADD_LOCK_PATH = join(process.env.PTRTEST_SHARED_TMP ?? os.tmpdir(), 'ptyrelay-useradd.lock');
const CREATE_USER_SCRIPT = [
  'getent passwd "$1" >/dev/null || useradd -m -s /bin/sh "$1" || [ $? -eq 9 ]',
  'usermod -s /bin/sh "$1"',
].join('\n');

/** Opens an ssh2 connection to the harness sshd, checking its host key. */
export function connectTo(
  sshd: Pick<SshdInstance, 'port' | 'user' | 'userKeyPath' | 'hostPublicKey'>,
  user = sshd.user,
): Promise<Client> {
  const expected = sshd.hostPublicKey.split(' ')[1];
  return new Promise((resolve, reject) => {
    const conn = new Client();
    conn
      .once('ready', () => resolve(conn))
      .once('error', reject)
      .connect({
        host: '127.0.0.1',
        port: sshd.port,
        username: user,
        privateKey: fs.readFileSync(sshd.userKeyPath),
        hostVerifier: (key: Buffer) => key.toString('base64') === expected,
        readyTimeout: 20_000,
      });
  });
}

/**
 * Creates {@link NO_NODE_USER} (root only; returns false otherwise): shell /bin/sh, a `~/.profile`
 * that sets `PATH=/nonexistent` so login shells find no node either, and no .bashrc (tests may add one).
 * Pair it with
 * `startSshd({ user: NO_NODE_USER, extraConfig: NO_NODE_SSHD_CONFIG })`.
 */
export function ensureNoNodeUser(): boolean {
  if (process.getuid?.() !== 0) return false;
  const locked = fs.existsSync(FLOCK_PATH) ? [FLOCK_PATH, USERADD_LOCK_PATH] : [];
  const cmd = [...locked, '/bin/sh', '-ec', CREATE_USER_SCRIPT, 'sh', NO_NODE_USER];
  const res = spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`creating ${NO_NODE_USER} failed: ${res.stderr}`);
  const [uid, gid, home] = spawnSync('getent', ['passwd', NO_NODE_USER], { encoding: 'utf8' })
    .stdout.trim()
    .split(':')
    .filter((_, i) => i === 2 || i === 3 || i === 5);
  for (const leftover of ['.bashrc', '.bash_profile', FAKE_NVM_DIR]) {
    fs.rmSync(join(home!, leftover), { recursive: true, force: true });
  }
  const profile = join(home!, '.profile');
  fs.writeFileSync(profile, 'PATH=/nonexistent\nexport PATH\n');
  fs.chownSync(profile, Number(uid), Number(gid));
  return true;
}
