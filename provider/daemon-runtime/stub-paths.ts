import { createHash } from 'node:crypto';
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { STUB_PROTOCOL_VERSION } from '../wire/messages.js';

/**
 * Set while a process `require`s stub.cjs as a library (the relay's first-contact helper calls
 * its `ensureDaemon`): the bundle then runs no command of its own. Unset it before starting
 * anything, or a child would inherit it.
 */
export const STUB_LIBRARY_ENV = 'PTYRELAY_STUB_LIBRARY';

/**
 * The stub's three dirs on a host, defined here once (docs/architecture.md, "The stub's dirs"):
 * - install: the bundle and node-pty, one `stub-<version>-<sha12>/` per build ({@link defaultInstallBase});
 *   must take files and run programs (node-pty's `.node` is mapped executable).
 * - runtime: daemon sockets, locks, the daemon log ({@link defaultRuntimeDir}).
 * - state: what survives a reboot: cold-restore snapshots, output history, id counters ({@link defaultStateDir}).
 */
export type StubDirKind = 'install' | 'runtime' | 'state';

/** The setting that moves each dir, for error messages. */
export const STUB_DIR_SETTINGS: Record<StubDirKind, string> = {
  install:
    'hosts.<name>.installDir in the relay config (default $XDG_CACHE_HOME/ptyrelay or ~/.cache/ptyrelay)',
  runtime:
    'hosts.<name>.runtimeDir in the relay config, or XDG_RUNTIME_DIR on the host (default ~/.cache/ptyrelay/run)',
  state:
    'hosts.<name>.stateDir in the relay config, or XDG_STATE_HOME on the host (default ~/.local/state/ptyrelay)',
};

/**
 * Where stub builds are installed: `$XDG_CACHE_HOME/ptyrelay` when that is absolute, else
 * `~/.cache/ptyrelay`. A configured `installDir` wins; `~/` in it means the host's home.
 */
export function defaultInstallBase(env: NodeJS.ProcessEnv = process.env, configured?: string): string {
  const home = env.HOME || homedir();
  if (configured) return configured.startsWith('~/') ? join(home, configured.slice(2)) : configured;
  const xdg = env.XDG_CACHE_HOME;
  return xdg?.startsWith('/') ? join(xdg, 'ptyrelay') : join(home, '.cache', 'ptyrelay');
}

/**
 * Where a user's stub daemon lives. Shared by the daemon and the local provider so both agree.
 * `$XDG_RUNTIME_DIR/ptyrelay` when set, else `~/.cache/ptyrelay/run`; the directory is 0700.
 */
export function defaultRuntimeDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PTYRELAY_RUNTIME_DIR) return env.PTYRELAY_RUNTIME_DIR;
  if (env.XDG_RUNTIME_DIR) return join(env.XDG_RUNTIME_DIR, 'ptyrelay');
  return join(env.HOME || homedir(), '.cache', 'ptyrelay', 'run');
}

/**
 * Where a user's stub keeps what must survive a reboot (cold-restore snapshots, output history, the
 * per-host terminal id counter): `$PTYRELAY_STATE_DIR`, else `$XDG_STATE_HOME/ptyrelay`, else
 * `~/.local/state/ptyrelay`. Unlike the runtime dir it is never on a tmpfs; the directory is 0700.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PTYRELAY_STATE_DIR) return env.PTYRELAY_STATE_DIR;
  if (env.XDG_STATE_HOME) return join(env.XDG_STATE_HOME, 'ptyrelay');
  return join(env.HOME || homedir(), '.local', 'state', 'ptyrelay');
}

/**
 * The build id is hashed from reads of this size: a buffer of the whole bundle (1.4 MB) was
 * garbage an idle relay or daemon never collects, and stayed in its RSS (idle relay 1.6 MB).
 */
const BUILD_ID_READ_BYTES = 64 * 1024;

/** A stub bundle's build id: sha256 of the file, 12 hex digits (`PTYRELAY_BUILD_ID` overrides, for tests). */
export function bundleBuildId(file: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.PTYRELAY_BUILD_ID) return env.PTYRELAY_BUILD_ID;
  const hash = createHash('sha256');
  const piece = Buffer.allocUnsafe(BUILD_ID_READ_BYTES);
  const fd = openSync(file, 'r');
  try {
    for (let n = readSync(fd, piece); n > 0; n = readSync(fd, piece)) hash.update(piece.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex').slice(0, 12);
}

/**
 * One daemon per (user, protocol major, build): a newer build starts its own daemon for new
 * sessions while the older one keeps serving its sessions until they end.
 */
export function daemonSocketPath(
  runtimeDir: string,
  buildId: string,
  protocol = STUB_PROTOCOL_VERSION,
): string {
  return join(runtimeDir, `stub-v${protocol}-${buildId}.sock`);
}

export function daemonLockPath(
  runtimeDir: string,
  buildId: string,
  protocol = STUB_PROTOCOL_VERSION,
): string {
  return join(runtimeDir, `stub-v${protocol}-${buildId}.lock`);
}

export function daemonLogPath(runtimeDir: string, protocol = STUB_PROTOCOL_VERSION): string {
  return join(runtimeDir, `stub-v${protocol}.log`);
}

/** Daemon sockets of this protocol major present in the runtime dir (alive or stale). */
export function listDaemonSockets(
  runtimeDir: string,
  protocol = STUB_PROTOCOL_VERSION,
): { buildId: string; socketPath: string }[] {
  const re = new RegExp(`^stub-v${protocol}-([0-9A-Za-z_.-]+)\\.sock$`);
  let names: string[] = [];
  try {
    names = readdirSync(runtimeDir);
  } catch {
    return [];
  }
  return names.flatMap((n) => {
    const m = re.exec(n);
    return m ? [{ buildId: m[1], socketPath: join(runtimeDir, n) }] : [];
  });
}
