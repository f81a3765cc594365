/**
 * A real dropbear SSH server on 127.0.0.1 for one login user: its own ed25519 host key, the user's
 * key in ~/.ssh/authorized_keys, no SFTP server reachable (see startDropbear). Dropbear has no
 * streamlocal forwarding, so the stub link goes over the exec bridge.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { capability, filesMissing } from './capabilities.js';
import type { ShellUser } from './shell-users.js';
import { canConnect, freePort, generateKey, spawnWatchdog, stopProcess } from './sshd.js';

export const DROPBEAR_PATH = '/usr/sbin/dropbear';
const DROPBEARKEY_PATH = '/usr/bin/dropbearkey';
const UNSHARE_PATH = '/usr/bin/unshare';
/** Where Debian's dropbear looks for an SFTP server (strings /usr/sbin/dropbear). */
export const DROPBEAR_SFTP_SERVER_PATH = '/usr/lib/sftp-server';
const START_TIMEOUT_MS = 10_000;
const POLL_MS = 25;
const PRIVATE_DIR_MODE = 0o700;
const PRIVATE_FILE_MODE = 0o600;
const PUBLIC_DIR_MODE = 0o755;

export interface DropbearInstance {
  port: number;
  user: string;
  userKeyPath: string;
  /** `ssh-ed25519 AAAA...` */
  hostPublicKey: string;
  knownHostsFile: string;
  logPath: string;
  stop(): Promise<void>;
}

/** Capability `dropbear`: dropbear, dropbearkey and unshare are installed (else prints why, or throws when required). */
export function dropbearAvailable(): boolean {
  return capability(
    'dropbear',
    filesMissing([DROPBEAR_PATH, DROPBEARKEY_PATH, UNSHARE_PATH], 'apt-get install dropbear-bin util-linux'),
  );
}

/** Starts dropbear in the foreground (-F), logging to a file, password logins off (-s). */
export async function startDropbear(user: ShellUser): Promise<DropbearInstance> {
  const dir = fs.mkdtempSync(join(os.tmpdir(), 'ptyrelay-dropbear-'));
  fs.chmodSync(dir, PUBLIC_DIR_MODE);
  let child: ChildProcess | undefined;
  try {
    const hostKey = join(dir, 'host_ed25519');
    const out = execFileSync(DROPBEARKEY_PATH, ['-t', 'ed25519', '-f', hostKey], { encoding: 'utf8' });
    const pub = out.split('\n').find((l) => l.startsWith('ssh-ed25519 '));
    if (!pub) throw new Error(`dropbearkey printed no public key:\n${out}`);
    const { privateKeyPath, publicKeyLine } = generateKey(join(dir, 'user_ed25519_key'));
    const sshDir = join(user.home, '.ssh');
    fs.mkdirSync(sshDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    fs.writeFileSync(join(sshDir, 'authorized_keys'), `${publicKeyLine}\n`, { mode: PRIVATE_FILE_MODE });
    for (const p of [sshDir, join(sshDir, 'authorized_keys')]) fs.chownSync(p, user.uid, user.gid);
    const port = await freePort();
    const knownHostsFile = join(dir, 'known_hosts');
    const [type, key] = pub.split(' ');
    fs.writeFileSync(knownHostsFile, `[127.0.0.1]:${port} ${type} ${key}\n`);
    const logPath = join(dir, 'dropbear.log');
    const logFd = fs.openSync(logPath, 'w');
    // Debian's openssh-sftp-server puts a symlink at dropbear's SFTP path: hide it in a private
    // mount namespace (a non-executable file bound over it), so this dropbear has no SFTP at all.
    const noSftp = join(dir, 'no-sftp-server');
    fs.writeFileSync(noSftp, '', { mode: 0o644 });
    const args = [
      '-F',
      '-E',
      '-s',
      '-w',
      '-p',
      `127.0.0.1:${port}`,
      '-r',
      hostKey,
      '-P',
      join(dir, 'dropbear.pid'),
    ];
    const script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"';
    child = spawn(
      UNSHARE_PATH,
      [
        '--mount',
        '--propagation',
        'private',
        '/bin/sh',
        '-c',
        script,
        'sh',
        noSftp,
        DROPBEAR_SFTP_SERVER_PATH,
        DROPBEAR_PATH,
        ...args,
      ],
      { stdio: ['ignore', logFd, logFd] },
    );
    fs.closeSync(logFd);
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await canConnect(port))) {
      if (child.exitCode !== null || Date.now() > deadline)
        throw new Error(`dropbear did not start:\n${fs.readFileSync(logPath, 'utf8')}`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    const watchdog = spawnWatchdog(child.pid!, dir);
    const started = child;
    let stopped: Promise<void> | undefined;
    return {
      port,
      user: user.name,
      userKeyPath: privateKeyPath,
      hostPublicKey: `${type} ${key}`,
      knownHostsFile,
      logPath,
      stop: () => {
        stopped ??= stopProcess(started, watchdog).then(() =>
          fs.rmSync(dir, { recursive: true, force: true }),
        );
        return stopped;
      },
    };
  } catch (err) {
    child?.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
