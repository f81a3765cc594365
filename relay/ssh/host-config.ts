import { existsSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { loadUserSshConfig } from './ssh-config.js';

/** One SSH host as configured for SshPtyProvider (fixed shape). */
export interface SshHostConfig {
  /** Host name, address, or an alias from ~/.ssh/config. */
  host: string;
  port?: number;
  user?: string;
  identityFile?: string;
  passphrase?: string;
  /** Used only when configured. */
  password?: string;
  /** Extra known_hosts file (checked with ~/.ssh/known_hosts; `accept-new` appends here). */
  knownHostsFile?: string;
  /** `strict` (default) refuses unknown keys; `accept-new` records them on first contact. */
  hostKeyPolicy?: 'strict' | 'accept-new';
  /** `[user@]host[:port]` of a jump host, as in OpenSSH. */
  proxyJump?: string;
  /** Try ssh-agent ($SSH_AUTH_SOCK); default true when the socket is set. */
  useAgent?: boolean;
  /** TCP connect + SSH handshake limit (default 30 s, or ConnectTimeout from ~/.ssh/config). */
  connectTimeoutMs?: number;
  /** SSH keepalive interval (default 15 s, or ServerAliveInterval). */
  keepaliveIntervalMs?: number;
  /** Where stub builds are installed on the host (default `$XDG_CACHE_HOME/ptyrelay` or `~/.cache/ptyrelay`). */
  installDir?: string;
  /** The daemon's runtime dir on the host (sockets, locks; default `$XDG_RUNTIME_DIR/ptyrelay` or `~/.cache/ptyrelay/run`). */
  runtimeDir?: string;
  /** The stub's persistent state dir on the host (default `$XDG_STATE_HOME/ptyrelay` or `~/.local/state/ptyrelay`). */
  stateDir?: string;
}

/** What a connection actually uses after merging the config with ~/.ssh/config. */
export interface ResolvedHost {
  alias: string;
  hostName: string;
  port: number;
  user: string;
  identityFiles: string[];
  passphrase?: string;
  password?: string;
  knownHostsFiles: string[];
  appendKnownHostsTo: string;
  hostKeyPolicy: 'strict' | 'accept-new';
  proxyJump?: string;
  useAgent: boolean;
  connectTimeoutMs: number;
  keepaliveIntervalMs: number;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
/** SSH keepalive; three unanswered ones drop the link (ssh2 keepaliveCountMax). */
export const DEFAULT_KEEPALIVE_MS = 15_000;
const DEFAULT_IDENTITIES = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

/** Explicit settings win; ~/.ssh/config fills the rest, then OpenSSH's defaults. */
export function resolveHost(cfg: SshHostConfig, home = process.env.HOME || homedir()): ResolvedHost {
  const localUser = userInfo().username;
  let fromFile: ReturnType<typeof loadUserSshConfig> = { identityFiles: [] };
  try {
    fromFile = loadUserSshConfig(home, cfg.host, localUser);
  } catch {
    // An unreadable ~/.ssh/config must not block an explicitly configured host.
  }
  const userKnown = fromFile.userKnownHostsFiles ?? [join(home, '.ssh', 'known_hosts')];
  const identityFiles = cfg.identityFile
    ? [cfg.identityFile]
    : fromFile.identityFiles.length > 0
      ? fromFile.identityFiles
      : DEFAULT_IDENTITIES.map((f) => join(home, '.ssh', f)).filter((f) => existsSync(f));
  return {
    alias: cfg.host,
    hostName: fromFile.hostName ?? cfg.host,
    port: cfg.port ?? fromFile.port ?? 22,
    user: cfg.user ?? fromFile.user ?? localUser,
    identityFiles,
    passphrase: cfg.passphrase,
    password: cfg.password,
    knownHostsFiles: [...userKnown, ...(cfg.knownHostsFile ? [cfg.knownHostsFile] : [])],
    appendKnownHostsTo: cfg.knownHostsFile ?? userKnown[0] ?? join(home, '.ssh', 'known_hosts'),
    hostKeyPolicy: cfg.hostKeyPolicy ?? 'strict',
    proxyJump: cfg.proxyJump ?? fromFile.proxyJump,
    useAgent: cfg.useAgent ?? Boolean(process.env.SSH_AUTH_SOCK),
    connectTimeoutMs: fromFile.connectTimeoutSec
      ? fromFile.connectTimeoutSec * 1000
      : DEFAULT_CONNECT_TIMEOUT_MS,
    keepaliveIntervalMs: fromFile.serverAliveIntervalSec
      ? fromFile.serverAliveIntervalSec * 1000
      : DEFAULT_KEEPALIVE_MS,
  };
}

/** Parses `[user@]host[:port]` (first hop of a ProxyJump list). */
export function parseJumpSpec(spec: string): { host: string; user?: string; port?: number } {
  const first = spec.split(',')[0].trim();
  const at = first.lastIndexOf('@');
  const user = at >= 0 ? first.slice(0, at) : undefined;
  let rest = at >= 0 ? first.slice(at + 1) : first;
  let port: number | undefined;
  const m = /^\[(.+)\]:(\d+)$/.exec(rest) ?? /^([^:]+):(\d+)$/.exec(rest);
  if (m) {
    rest = m[1];
    port = Number(m[2]);
  }
  return { host: rest, user, port };
}
