/**
 * Test harness running a real OpenSSH `sshd` on 127.0.0.1 with a throwaway config, host key and
 * authorized key. Each instance owns a temp dir; `stop()` kills the daemon and every process it spawned.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { capability, filesMissing } from './capabilities.js';

/** Options for {@link startSshd}. */
export interface SshdOptions {
  allowStreamLocalForwarding?: boolean;
  allowTcpForwarding?: boolean;
  /** Extra sshd_config lines. Lines before any `Match` override the harness defaults. */
  extraConfig?: string[];
  /** Login user; default {@link DEFAULT_TEST_USER}. Ignored (current user is used) when not root. */
  user?: string;
  /** The `Subsystem sftp` command (default `internal-sftp`); null leaves the line out (no SFTP). */
  sftpSubsystem?: string | null;
}

/** A running sshd started by {@link startSshd}. */
export interface SshdInstance {
  port: number;
  host: '127.0.0.1';
  user: string;
  userHome: string;
  /** Unencrypted ed25519 private key authorized for `user`. */
  userKeyPath: string;
  hostKeyPath: string;
  /** `ssh-ed25519 AAAA...` (no comment). */
  hostPublicKey: string;
  /** `[127.0.0.1]:PORT ssh-ed25519 AAAA...` */
  knownHostsLine: string;
  /** A file containing only {@link SshdInstance.knownHostsLine}. */
  knownHostsFile: string;
  dir: string;
  logPath: string;
  /** Pid of the listening sshd process. */
  pid: number;
  /** Appends a public key line to the user's authorized keys. */
  authorize(publicKeyLine: string): void;
  /** Kills sshd and its descendants, waits for exit, removes the temp dir. Idempotent. */
  stop(): Promise<void>;
}

/** Default login user created for the tests when running as root. */
export const DEFAULT_TEST_USER = 'ptyrelay-test';

const SSHD_PATH = '/usr/sbin/sshd';
const SSH_KEYGEN_PATH = '/usr/bin/ssh-keygen';
const PRIVSEP_DIR = '/run/sshd';
const LOOPBACK = '127.0.0.1';
const PUBLIC_DIR_MODE = 0o755;
const PRIVATE_FILE_MODE = 0o600;
const READABLE_FILE_MODE = 0o644;
const START_ATTEMPTS = 5;
const START_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 3_000;
const POLL_MS = 25;
const FLOCK_PATH = '/usr/bin/flock';
/** Shared by every test run on the machine (not the run's own TMPDIR): useradd races across runs. */
const USERADD_LOCK_PATH = join(process.env.PTRTEST_SHARED_TMP ?? os.tmpdir(), 'ptyrelay-useradd.lock');
/**
 * Creates user "$1" unless present (useradd exit 9 = someone outside our lock just created it) and
 * replaces a `!` locked password with `*`. Concurrent `useradd` runs for one name race inside shadow-utils
 * (skel files ended up owned by another uid than the account's), hence the flock around it.
 */
const ENSURE_USER_SCRIPT = [
  'getent passwd "$1" >/dev/null || useradd -m -s /bin/bash "$1" || [ $? -eq 9 ]',
  'case "$(getent shadow "$1" | cut -d: -f2)" in "!"*) usermod -p "*" "$1" ;; esac',
].join('\n');
const LISTENING_PATTERN = /Server listening on 127\.0\.0\.1 port (\d+)/;
const BIND_FAILED_PATTERN = /Address already in use|Cannot bind any address/;

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) if (child.pid) signal(child.pid, 'SIGKILL');
});
/** Flipped to a per-instance file the first time an old sshd rejects `PidFile none`. */
let pidFileNoneSupported = true;

/** Why the harness cannot start sshd here (undefined when it can): sshd or ssh-keygen is not installed. */
export function sshdMissing(): string | undefined {
  return filesMissing([SSHD_PATH, SSH_KEYGEN_PATH], 'apt-get install openssh-server');
}

/**
 * Capability `sshd`: whether an sshd binary (and ssh-keygen) is installed where the harness
 * expects it. When not, prints why (the suite skips) or, when PTYRELAY_REQUIRE names sshd, throws.
 */
export function sshdAvailable(): boolean {
  return capability('sshd', sshdMissing());
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

function lookupUser(name: string): { home: string; uid: number; gid: number } | undefined {
  const res = spawnSync('getent', ['passwd', name], { encoding: 'utf8' });
  if (res.status !== 0) return undefined;
  const fields = res.stdout.trim().split(':');
  return { uid: Number(fields[2]), gid: Number(fields[3]), home: fields[5]! };
}

/**
 * Makes sure the login user exists. As root: creates `name` (default {@link DEFAULT_TEST_USER}) with a
 * home dir and an unlocked password field (sshd refuses key logins to `!`-locked accounts when PAM is
 * off). Safe to call concurrently from several test files. Not root: returns the current user.
 */
export function ensureTestUser(name: string = DEFAULT_TEST_USER): {
  user: string;
  home: string;
  uid: number;
  gid: number;
} {
  if (!isRoot()) {
    const me = os.userInfo();
    return { user: me.username, home: me.homedir, uid: me.uid, gid: me.gid };
  }
  const locked = fs.existsSync(FLOCK_PATH) ? [FLOCK_PATH, USERADD_LOCK_PATH] : [];
  const cmd = [...locked, '/bin/sh', '-ec', ENSURE_USER_SCRIPT, 'sh', name];
  const res = spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`creating user ${name} failed (${res.status}): ${res.stderr}`);
  const info = lookupUser(name);
  if (!info) throw new Error(`user ${name} missing after useradd`);
  fs.mkdirSync(info.home, { recursive: true, mode: PUBLIC_DIR_MODE });
  fs.chownSync(info.home, info.uid, info.gid);
  return { user: name, ...info };
}

/** Generates a key pair with ssh-keygen at `path` (overwriting) and returns the public key line. */
export function generateKey(
  path: string,
  opts: { passphrase?: string; type?: 'ed25519' | 'rsa' } = {},
): { privateKeyPath: string; publicKeyLine: string } {
  fs.rmSync(path, { force: true });
  fs.rmSync(`${path}.pub`, { force: true });
  const args = [
    '-q',
    '-t',
    opts.type ?? 'ed25519',
    '-N',
    opts.passphrase ?? '',
    '-C',
    'ptyrelay',
    '-f',
    path,
  ];
  execFileSync(SSH_KEYGEN_PATH, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  return { privateKeyPath: path, publicKeyLine: fs.readFileSync(`${path}.pub`, 'utf8').trim() };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, LOOPBACK, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: LOOPBACK, port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const readLog = (path: string): string => (fs.existsSync(path) ? fs.readFileSync(path, 'utf8') : '');

function buildConfig(dir: string, port: number, hostKeyPath: string, opts: SshdOptions): string {
  const pidFile = pidFileNoneSupported ? 'none' : join(dir, 'sshd.pid');
  const yesNo = (v: boolean | undefined): string => (v === false ? 'no' : 'yes');
  const extra = opts.extraConfig ?? [];
  const matchAt = extra.findIndex((l) => /^\s*match\s/i.test(l));
  const given = matchAt < 0 ? extra : extra.slice(0, matchAt);
  const matchBlocks = matchAt < 0 ? [] : extra.slice(matchAt);
  // sshd uses only its first SetEnv line: the test's variables and the run's go on one line.
  const isSetEnv = (l: string) => /^\s*setenv\s/i.test(l);
  const setEnv = [...given.filter(isSetEnv), ...runEnvironment()].map((l) =>
    l.trim().replace(/^setenv\s+/i, ''),
  );
  const overrides = [
    ...(setEnv.length > 0 ? [`SetEnv ${setEnv.join(' ')}`] : []),
    ...given.filter((l) => !isSetEnv(l)),
  ];
  // sshd keeps the first value it sees for a keyword, so overrides go before the defaults.
  return [
    ...overrides,
    `Port ${port}`,
    `ListenAddress ${LOOPBACK}`,
    `HostKey ${hostKeyPath}`,
    `PidFile ${pidFile}`,
    'UsePAM no',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes',
    'PermitRootLogin no',
    `AuthorizedKeysFile ${join(dir, 'authorized_keys', '%u')}`,
    'StrictModes no',
    `AllowStreamLocalForwarding ${yesNo(opts.allowStreamLocalForwarding)}`,
    `AllowTcpForwarding ${yesNo(opts.allowTcpForwarding)}`,
    'LogLevel VERBOSE',
    'UseDNS no',
    'PrintMotd no',
    'PrintLastLog no',
    'MaxStartups 100',
    'MaxSessions 100',
    ...(opts.sftpSubsystem === null ? [] : [`Subsystem sftp ${opts.sftpSubsystem ?? 'internal-sftp'}`]),
    ...matchBlocks,
    '',
  ].join('\n');
}

/**
 * `SetEnv` for the test run's marker and TMPDIR, when the suite runs under leak-check.ts: they
 * reach the login user's processes.
 */
function runEnvironment(): string[] {
  const marker = process.env.PTRTEST_RUN;
  const tmp = process.env.TMPDIR;
  return marker && tmp ? [`SetEnv PTRTEST_RUN=${marker} TMPDIR=${tmp}`] : [];
}

/** State letter and parent pid of a process, or undefined once it is gone. */
function procStat(pid: number | string): { state: string; ppid: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The comm field may contain spaces and parens; the fields after the last ')' are fixed.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: state!, ppid: Number(ppid) };
  } catch {
    return undefined;
  }
}

/** Descendants of `pid` (zombies included) from /proc, grouped by depth, children first. */
export function descendantLevels(pid: number): number[][] {
  const children = new Map<number, number[]>();
  for (const name of fs.readdirSync('/proc')) {
    const ppid = /^\d+$/.test(name) ? procStat(name)?.ppid : undefined;
    if (ppid !== undefined) children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
  }
  const levels: number[][] = [];
  let current = [pid];
  while (current.length > 0) {
    current = current.flatMap((p) => children.get(p) ?? []);
    if (current.length > 0) levels.push(current);
  }
  return levels;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

/** Live and not a zombie: this VM's PID 1 reaps orphans lazily, and kill(pid, 0) succeeds on zombies. */
const alive = (pid: number): boolean => (procStat(pid)?.state ?? 'Z') !== 'Z';

/**
 * A detached shell that kills sshd and removes its dir once our stdin pipe hits EOF, i.e. when this Node
 * process dies without stop() or exit hooks running (vitest may kill its workers).
 */
export function spawnWatchdog(sshdPid: number, dir: string): ChildProcess {
  const script = 'read _; kill -TERM "$0" 2>/dev/null; sleep 1; rm -rf "$1"';
  const watchdog = spawn('/bin/sh', ['-c', script, String(sshdPid), dir], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  watchdog.unref();
  (watchdog.stdin as unknown as { unref(): void }).unref();
  return watchdog;
}

async function waitUntilGone(pids: number[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && pids.some(alive)) await delay(POLL_MS);
  for (const p of pids) if (alive(p)) signal(p, 'SIGKILL');
}

type LaunchResult = { kind: 'ok'; child: ChildProcess } | { kind: 'retry' };

async function launch(configPath: string, logPath: string, port: number): Promise<LaunchResult> {
  const logFd = fs.openSync(logPath, 'w');
  const child = spawn(SSHD_PATH, ['-D', '-e', '-f', configPath], { stdio: ['ignore', logFd, logFd] });
  fs.closeSync(logFd);
  let exited = false;
  child.once('exit', () => {
    exited = true;
    running.delete(child);
  });
  running.add(child);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const log = readLog(logPath);
    if (exited) {
      if (BIND_FAILED_PATTERN.test(log)) return { kind: 'retry' };
      if (pidFileNoneSupported && /pidfile/i.test(log)) {
        pidFileNoneSupported = false;
        return { kind: 'retry' };
      }
      throw new Error(`sshd exited during startup (code ${child.exitCode}):\n${log}`);
    }
    if (LISTENING_PATTERN.test(log) && (await canConnect(port))) return { kind: 'ok', child };
    await delay(POLL_MS);
  }
  child.kill('SIGKILL');
  throw new Error(`sshd did not start within ${START_TIMEOUT_MS} ms:\n${readLog(logPath)}`);
}

export async function stopProcess(child: ChildProcess, watchdog: ChildProcess): Promise<void> {
  if (watchdog.pid !== undefined) signal(watchdog.pid, 'SIGKILL');
  const pid = child.pid;
  if (pid === undefined) return;
  const exited =
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((r) => child.once('exit', () => r()));
  // Per-connection sshd processes call setsid(), so a process-group kill would miss them. Deepest go first
  // so their parents are still there to reap them: orphaned zombies would linger under this VM's PID 1.
  for (const level of descendantLevels(pid).reverse()) {
    for (const p of level) signal(p, 'SIGTERM');
    await waitUntilGone(level, STOP_GRACE_MS);
  }
  // Let the listener reap exited children (zombies included) before it goes away.
  const reapDeadline = Date.now() + STOP_GRACE_MS;
  while (Date.now() < reapDeadline && descendantLevels(pid).length > 0) await delay(POLL_MS);
  signal(pid, 'SIGTERM');
  await waitUntilGone([pid], STOP_GRACE_MS);
  await exited;
}

/** Starts sshd on a free loopback port and resolves once it accepts connections. */
export async function startSshd(opts: SshdOptions = {}): Promise<SshdInstance> {
  const missing = sshdMissing();
  if (missing) throw new Error(missing);
  const account = ensureTestUser(opts.user);
  if (isRoot() && !fs.existsSync(PRIVSEP_DIR))
    fs.mkdirSync(PRIVSEP_DIR, { recursive: true, mode: PUBLIC_DIR_MODE });

  const dir = fs.mkdtempSync(join(os.tmpdir(), 'ptyrelay-sshd-'));
  try {
    // sshd reads authorized keys as the login user, so the path to them must be traversable.
    fs.chmodSync(dir, PUBLIC_DIR_MODE);
    const hostKeyPath = join(dir, 'ssh_host_ed25519_key');
    generateKey(hostKeyPath);
    const [hostKeyType, hostKeyBase64] = fs.readFileSync(`${hostKeyPath}.pub`, 'utf8').trim().split(/\s+/);
    const hostPublicKey = `${hostKeyType} ${hostKeyBase64}`;
    const { privateKeyPath: userKeyPath, publicKeyLine } = generateKey(join(dir, 'user_ed25519_key'));

    const authDir = join(dir, 'authorized_keys');
    fs.mkdirSync(authDir, { mode: PUBLIC_DIR_MODE });
    const authFile = join(authDir, account.user);
    fs.writeFileSync(authFile, `${publicKeyLine}\n`, { mode: READABLE_FILE_MODE });
    if (isRoot()) fs.chownSync(authFile, account.uid, account.gid);
    const authorize = (line: string): void => fs.appendFileSync(authFile, `${line.trim()}\n`);

    const configPath = join(dir, 'sshd_config');
    const logPath = join(dir, 'sshd.log');
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      fs.writeFileSync(configPath, buildConfig(dir, port, hostKeyPath, opts), { mode: PRIVATE_FILE_MODE });
      const result = await launch(configPath, logPath, port);
      if (result.kind === 'retry') {
        if (attempt >= START_ATTEMPTS) throw new Error(`sshd failed to start:\n${readLog(logPath)}`);
        continue;
      }
      const knownHostsLine = `[${LOOPBACK}]:${port} ${hostPublicKey}`;
      const knownHostsFile = join(dir, 'known_hosts');
      fs.writeFileSync(knownHostsFile, `${knownHostsLine}\n`, { mode: PRIVATE_FILE_MODE });
      const watchdog = spawnWatchdog(result.child.pid!, dir);
      let stopped: Promise<void> | undefined;
      return {
        port,
        host: LOOPBACK,
        user: account.user,
        userHome: account.home,
        userKeyPath,
        hostKeyPath,
        hostPublicKey,
        knownHostsLine,
        knownHostsFile,
        dir,
        logPath,
        pid: result.child.pid!,
        authorize,
        stop: () => {
          stopped ??= stopProcess(result.child, watchdog).then(() =>
            fs.rmSync(dir, { recursive: true, force: true }),
          );
          return stopped;
        },
      };
    }
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
