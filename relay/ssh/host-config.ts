import { existsSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import * as z from 'zod/mini';
import { PtyRelayError } from '../../provider/errors.js';
import { addIssue, argv, bool, integer, oneOf, settings, text } from '../core/config-validate.js';
import { type HistoryConfig, historyConfigSchema } from '../core/history-config.js';
import { expandTilde, expandTokens, loadUserSshConfig, SshConfigError } from './ssh-config.js';

/** One SSH host as configured for SshPtyProvider (fixed shape). */
export interface SshHostConfig {
  /** Host name, address, or an alias from ~/.ssh/config. */
  host: string;
  port?: number;
  user?: string;
  /** Private key file; `~` and `%d %u %h %p %r` are expanded as in ~/.ssh/config. */
  identityFile?: string;
  passphrase?: string;
  /** Used only when configured. */
  password?: string;
  /** Prints the password on stdout: argv run without a shell, at each connect (instead of `password`). */
  passwordCommand?: string[];
  /** Prints the identity file's passphrase on stdout: argv run without a shell (instead of `passphrase`). */
  passphraseCommand?: string[];
  /** Extra known_hosts file (checked with ~/.ssh/known_hosts; new keys are recorded here); `~` and tokens expanded. */
  knownHostsFile?: string;
  /**
   * Unknown host keys: `ask` (the CLI asks, like ssh), `strict` refuses them, `accept-new`
   * records them, `no` records them and also accepts a changed key (with a warning). Unset:
   * StrictHostKeyChecking from ~/.ssh/config, else `ask`.
   */
  hostKeyPolicy?: HostKeyPolicy;
  /** `[user@]host[:port]` of a jump host, as in OpenSSH. */
  proxyJump?: string;
  /** Try ssh-agent ($SSH_AUTH_SOCK); default true when the socket is set. */
  useAgent?: boolean;
  /** TCP connect + SSH handshake limit (default 30 s, or ConnectTimeout from ~/.ssh/config). */
  connectTimeoutMs?: number;
  /** SSH keepalive interval (ServerAliveInterval when unset; off when neither is set: the link-health probes find dead links). */
  keepaliveIntervalMs?: number;
  /** Where stub builds are installed on the host (default `$XDG_CACHE_HOME/ptyrelay` or `~/.cache/ptyrelay`). */
  installDir?: string;
  /** The daemon's runtime dir on the host (sockets, locks; default `$XDG_RUNTIME_DIR/ptyrelay` or `~/.cache/ptyrelay/run`). */
  runtimeDir?: string;
  /** The stub's persistent state dir on the host (default `$XDG_STATE_HOME/ptyrelay` or `~/.local/state/ptyrelay`). */
  stateDir?: string;
  /** Output history of the daemon started on this host; each field set wins over the top-level `history`. */
  history?: HistoryConfig;
}

/** How unknown and changed host keys are treated (StrictHostKeyChecking yes / ask / accept-new / no). */
export type HostKeyPolicy = 'strict' | 'ask' | 'accept-new' | 'no';

/** A dir on the host: absolute, or under the host's home. */
const hostDir = () =>
  z.optional(
    text().check(
      z.refine((v) => v.startsWith('/') || v.startsWith('~/'), {
        error: (iss) => `must be an absolute path or start with ~/ (the host's home), got ${iss.input}`,
      }),
    ),
  );

/** The settings of a host entry in the relay config, in the order its messages list them. */
const HOST_SHAPE = {
  host: text('is required (a host name, address or ssh alias)'),
  port: z.optional(integer(1, 65535)),
  user: z.optional(text()),
  identityFile: z.optional(text()),
  passphrase: z.optional(text()),
  password: z.optional(text()),
  passwordCommand: z.optional(argv()),
  passphraseCommand: z.optional(argv()),
  knownHostsFile: z.optional(text()),
  hostKeyPolicy: z.optional(oneOf(['strict', 'ask', 'accept-new', 'no'])),
  proxyJump: z.optional(text()),
  useAgent: z.optional(bool()),
  installDir: hostDir(),
  runtimeDir: hostDir(),
  stateDir: hostDir(),
  history: z.optional(historyConfigSchema),
};

/** The keys a host entry may have (also what the config fuzz suite generates). */
export const HOST_KEYS: readonly string[] = Object.keys(HOST_SHAPE);

/**
 * One entry of the relay config's `hosts`. A secret comes as itself or from its command, not
 * both; its history's relations to the ring are checked with the whole config.
 */
export const hostConfigSchema = settings(HOST_SHAPE).check((payload) => {
  for (const [plain, command] of [
    ['password', 'passwordCommand'],
    ['passphrase', 'passphraseCommand'],
  ] as const) {
    if (payload.value[plain] !== undefined && payload.value[command] !== undefined)
      addIssue(payload, [], `: set ${plain} or ${command}, not both`);
  }
}) satisfies z.ZodMiniType<SshHostConfig>;

/** OpenSSH's StrictHostKeyChecking values (as ssh-config.ts normalises them) in ptyrelay's terms. */
const POLICY_OF_STRICT_HOST_KEY_CHECKING: Record<string, HostKeyPolicy> = {
  yes: 'strict',
  ask: 'ask',
  'accept-new': 'accept-new',
  no: 'no',
};

/** What a connection actually uses after merging the config with ~/.ssh/config. */
export interface ResolvedHost {
  alias: string;
  hostName: string;
  port: number;
  user: string;
  identityFiles: string[];
  passphrase?: string;
  password?: string;
  passwordCommand?: string[];
  passphraseCommand?: string[];
  knownHostsFiles: string[];
  appendKnownHostsTo: string;
  hostKeyPolicy: HostKeyPolicy;
  proxyJump?: string;
  useAgent: boolean;
  /** IdentitiesOnly: only the identity files are offered (the agent is not used). */
  identitiesOnly: boolean;
  connectTimeoutMs: number;
  keepaliveIntervalMs: number;
}

/**
 * TCP connect + SSH handshake limit when ConnectTimeout is not set: a first contact fails within
 * it; long enough for a slow link's handshake, short enough that a wrong address is noticed soon.
 */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/**
 * No SSH keepalive unless asked for (ServerAliveInterval, or the host's keepaliveIntervalMs), as
 * OpenSSH: the relay's own link-health probes find dead links (docs/reconnect.md).
 */
export const DEFAULT_KEEPALIVE_MS = 0;
const DEFAULT_IDENTITIES = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

/**
 * This process's user name, as ssh takes it for the default login: from the passwd entry, else
 * `$USER`, else the uid (a container may run the relay under a uid the image has no entry for).
 */
function localUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER || String(process.getuid?.() ?? 'unknown');
  }
}

/**
 * Explicit settings win; ~/.ssh/config fills the rest, then OpenSSH's defaults. A malformed
 * ~/.ssh/config fails with CONFIG_INVALID naming its file and line.
 */
export function resolveHost(cfg: SshHostConfig, home = process.env.HOME || homedir()): ResolvedHost {
  const localUser = localUserName();
  let fromFile: ReturnType<typeof loadUserSshConfig>;
  try {
    fromFile = loadUserSshConfig(home, cfg.host, localUser);
  } catch (err) {
    if (err instanceof SshConfigError)
      throw new PtyRelayError('CONFIG_INVALID', err.message, { host: cfg.host });
    throw new PtyRelayError('CONFIG_INVALID', `cannot read ~/.ssh/config: ${(err as Error).message}`, {
      host: cfg.host,
    });
  }
  const hostName = fromFile.hostName ?? cfg.host;
  const port = cfg.port ?? fromFile.port ?? 22;
  const user = cfg.user ?? fromFile.user ?? localUser;
  // The relay's own paths get the same `~` and token expansion as ~/.ssh/config's.
  const tokens = { h: hostName, n: cfg.host, u: localUser, r: user, p: String(port), d: home };
  const expand = (p: string) => expandTokens(expandTilde(p, home), tokens);
  const knownHostsFile = cfg.knownHostsFile !== undefined ? expand(cfg.knownHostsFile) : undefined;
  const userKnown = fromFile.userKnownHostsFiles ?? [join(home, '.ssh', 'known_hosts')];
  const identityFiles = cfg.identityFile
    ? [expand(cfg.identityFile)]
    : fromFile.identityFiles.length > 0
      ? fromFile.identityFiles
      : DEFAULT_IDENTITIES.map((f) => join(home, '.ssh', f)).filter((f) => existsSync(f));
  const filePolicy = fromFile.strictHostKeyChecking
    ? POLICY_OF_STRICT_HOST_KEY_CHECKING[fromFile.strictHostKeyChecking]
    : undefined;
  return {
    alias: cfg.host,
    hostName,
    port,
    user,
    identityFiles,
    passphrase: cfg.passphrase,
    password: cfg.password,
    ...(cfg.passwordCommand ? { passwordCommand: cfg.passwordCommand } : {}),
    ...(cfg.passphraseCommand ? { passphraseCommand: cfg.passphraseCommand } : {}),
    knownHostsFiles: [...userKnown, ...(knownHostsFile ? [knownHostsFile] : [])],
    appendKnownHostsTo: knownHostsFile ?? userKnown[0] ?? join(home, '.ssh', 'known_hosts'),
    hostKeyPolicy: cfg.hostKeyPolicy ?? filePolicy ?? 'ask',
    proxyJump: cfg.proxyJump ?? fromFile.proxyJump,
    useAgent: cfg.useAgent ?? Boolean(process.env.SSH_AUTH_SOCK),
    identitiesOnly: fromFile.identitiesOnly ?? false,
    connectTimeoutMs:
      cfg.connectTimeoutMs ??
      (fromFile.connectTimeoutSec ? fromFile.connectTimeoutSec * 1000 : DEFAULT_CONNECT_TIMEOUT_MS),
    keepaliveIntervalMs:
      cfg.keepaliveIntervalMs ??
      (fromFile.serverAliveIntervalSec ? fromFile.serverAliveIntervalSec * 1000 : DEFAULT_KEEPALIVE_MS),
  };
}

/** One hop of a ProxyJump list. */
export interface JumpSpec {
  host: string;
  user?: string;
  port?: number;
}

/** Parses one `[user@]host[:port]` or `ssh://[user@]host[:port]` hop. */
export function parseJumpSpec(spec: string): JumpSpec {
  const first = spec.trim().replace(/^ssh:\/\//, '');
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

/** The hops of a ProxyJump list in connection order (`a,b`: a first, then b through a). */
export function parseJumpChain(list: string): string[] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** The first host a connection to `h` reaches over TCP: its first ProxyJump hop, or itself. */
export function firstHop(
  h: ResolvedHost,
  resolveJump: (spec: string) => ResolvedHost | undefined,
): { hostName: string; port: number } {
  const hops = h.proxyJump && h.proxyJump !== 'none' ? parseJumpChain(h.proxyJump) : [];
  if (hops.length === 0) return h;
  const spec = parseJumpSpec(hops[0]!);
  const jh = resolveJump(hops[0]!) ?? resolveHost({ host: spec.host, user: spec.user, port: spec.port });
  return jh.proxyJump && hops.length === 1 ? firstHop(jh, resolveJump) : jh;
}
