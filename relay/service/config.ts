import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { DEFAULT_MAX_QUEUE_AGE_MS } from '../../provider/input-queue.js';
import { type AgentsConfig, validateAgentsConfig } from '../agents/agent-config.js';
import {
  configError,
  describe,
  integer,
  type Obj,
  object,
  oneOf,
  onlyKeys,
  optArgv,
  optBoolean,
  optString,
} from '../core/config-validate.js';
import { assertSecretFileMode } from '../core/file-modes.js';
import { type HistoryConfig, validateHistoryConfig } from '../core/history-config.js';
import type { SshHostConfig } from '../ssh/host-config.js';

export type { SshHostConfig };

const KiB = 1024;
const MiB = 1024 * KiB;

/** Default listen address: loopback only. */
export const DEFAULT_LISTEN = { host: '127.0.0.1', port: 7681 } as const;
/** The built-in host; always present, never configured. */
export const LOCAL_HOST = 'local';
/** Host names as they appear in terminal ids and URIs. */
const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** Largest ring a daemon may keep per session (below the stub link's 32 MiB frame limit). */
const MAX_RING_BYTES = 16 * MiB;

/** Resource limits (docs/config.md, `limits`). */
export interface RelayLimits {
  /** Output ring per session in daemons this relay starts (`--ring-bytes`). */
  ringBytes: number;
  /** Ring of a session every link has in the background (`--background-ring-bytes`). */
  backgroundRingBytes: number;
  /** Terminals the service publishes at most. */
  maxTerminals: number;
  /** Output kept in an AHP terminal snapshot (UTF-16 code units). */
  contentBytes: number;
  /** Envelopes kept for AHP `reconnect` replay. */
  replayActions: number;
  /** Approximate bytes of envelopes kept for replay. */
  replayBytes: number;
  /** Largest WebSocket message accepted from a client. */
  maxMessageBytes: number;
  /** Running terminals on one host. */
  maxTerminalsPerHost: number;
  /** Running terminals one client (claim holder) holds. */
  maxTerminalsPerClient: number;
  /** Largest single input write (an input frame, AHP `terminal/input`). */
  maxInputBytes: number;
  /** Open WebSocket connections to the relay. */
  maxConnections: number;
}

/** Flow control between the relay and its WebSocket clients (docs/config.md, `flowControl`). */
export interface FlowControlConfig {
  /** Unacknowledged output bytes per terminal a slow consumer link may be behind before output is held. */
  creditWindow: number;
  /** Largest window a fast link grows to (stub `--credit-window-max`; at most half the ring is used). */
  creditWindowMax: number;
  /** A consumer acknowledges at least every `ackBytes` it processed. */
  ackBytes: number;
  /** Socket bytes queued above which a connection stops receiving live output. */
  highWatermark: number;
  /** Socket bytes queued below which a held connection is caught up. */
  lowWatermark: number;
  /** Floor of the keep-tail a background terminal sends per second (stub `--keep-tail`). */
  keepTailBytes: number;
  /** Output all WebSocket clients together may have queued before every terminal is held. */
  relayPendingCap: number;
  /** Output all connections of a host's daemon may have queued before its terminals pause (stub `--pending-cap`). */
  stubPendingCap: number;
}

/** The relay service configuration (validated, defaults filled in). */
export interface RelayConfig {
  listen: { host: string; port: number };
  /** SSH hosts by name; `local` is built in and not listed here. */
  hosts: Record<string, SshHostConfig>;
  limits: RelayLimits;
  flowControl: FlowControlConfig;
  /** Browser Origins allowed to connect (clients that send no Origin are always allowed). */
  allowedOrigins: string[];
  /** Agent terminals: readiness tuning, bounds, owner grace (docs/config.md, `agents`). */
  agents: AgentsConfig;
  /** Input typed during an outage (docs/config.md, `input`). */
  input: InputConfig;
  /** Serve https/wss with this certificate and key (docs/config.md, `tls`). */
  tls?: { cert: string; key: string };
  /** Output history of the daemons this relay starts, every host (docs/config.md, `history`). */
  history?: HistoryConfig;
}

/** Input queued while a host is unreachable (docs/config.md, `input`). */
export interface InputConfig {
  /** Queued input older than this is discarded instead of sent, and its sender is told. */
  maxQueueAgeMs: number;
}

export const DEFAULT_INPUT: InputConfig = { maxQueueAgeMs: DEFAULT_MAX_QUEUE_AGE_MS };

function validateInput(raw: unknown): InputConfig {
  const o = object(raw, 'input');
  onlyKeys(o, Object.keys(DEFAULT_INPUT), 'input');
  // At least a second (a keystroke in flight is older than that only during an outage); at most a day.
  return {
    maxQueueAgeMs: integer(o, 'maxQueueAgeMs', 'input', 1000, 86_400_000, DEFAULT_INPUT.maxQueueAgeMs),
  };
}

export const DEFAULT_LIMITS: RelayLimits = {
  ringBytes: 4 * MiB,
  backgroundRingBytes: 512 * KiB,
  maxTerminals: 256,
  contentBytes: 256 * KiB,
  replayActions: 10_000,
  replayBytes: 8 * MiB,
  maxMessageBytes: 16 * MiB,
  maxTerminalsPerHost: 256,
  maxTerminalsPerClient: 64,
  maxInputBytes: 1 * MiB,
  maxConnections: 256,
};

export const DEFAULT_FLOW_CONTROL: FlowControlConfig = {
  creditWindow: 256 * KiB,
  creditWindowMax: 2 * MiB,
  ackBytes: 64 * KiB,
  highWatermark: 1 * MiB,
  lowWatermark: 256 * KiB,
  keepTailBytes: 64 * KiB,
  relayPendingCap: 64 * MiB,
  stubPendingCap: 64 * MiB,
};

const TOP_KEYS = [
  '$schema',
  'listen',
  'hosts',
  'limits',
  'flowControl',
  'allowedOrigins',
  'agents',
  'input',
  'tls',
  'history',
] as const;
/** The keys a host entry may have (also what the config fuzz suite generates). */
export const HOST_KEYS = [
  'host',
  'port',
  'user',
  'identityFile',
  'passphrase',
  'password',
  'passwordCommand',
  'passphraseCommand',
  'knownHostsFile',
  'hostKeyPolicy',
  'proxyJump',
  'useAgent',
  'installDir',
  'runtimeDir',
  'stateDir',
  'history',
] as const;

function validateTls(raw: unknown): RelayConfig['tls'] {
  if (raw === undefined) return undefined;
  const o = object(raw, 'tls');
  onlyKeys(o, ['cert', 'key'], 'tls');
  const cert = optString(o, 'cert', 'tls');
  const key = optString(o, 'key', 'tls');
  if (cert === undefined || key === undefined)
    throw configError('tls needs both cert and key (PEM file paths)');
  return { cert, key };
}

function validateListen(raw: unknown): RelayConfig['listen'] {
  const o = object(raw, 'listen');
  onlyKeys(o, ['host', 'port'], 'listen');
  return {
    host: optString(o, 'host', 'listen') ?? DEFAULT_LISTEN.host,
    port: integer(o, 'port', 'listen', 0, 65535, DEFAULT_LISTEN.port),
  };
}

function validateHost(name: string, raw: unknown, ringBytes: number): SshHostConfig {
  const field = `hosts.${name}`;
  if (name === LOCAL_HOST) throw configError(`hosts.local is reserved for the built-in local host`);
  if (!HOST_NAME.test(name)) {
    throw configError(`${field}: host names may only use letters, digits, '.', '_' and '-'`);
  }
  const o = object(raw, field);
  if (raw === undefined) throw configError(`${field} must be an object`);
  onlyKeys(o, HOST_KEYS, field);
  const host = optString(o, 'host', field);
  if (host === undefined) throw configError(`${field}.host is required (a host name, address or ssh alias)`);
  const out: SshHostConfig = { host };
  const port = integer(o, 'port', field, 1, 65535);
  if (port !== undefined) out.port = port;
  for (const k of [
    'user',
    'identityFile',
    'passphrase',
    'password',
    'knownHostsFile',
    'proxyJump',
    'installDir',
    'runtimeDir',
    'stateDir',
  ] as const) {
    const v = optString(o, k, field);
    if (v !== undefined) out[k] = v;
  }
  for (const k of ['installDir', 'runtimeDir', 'stateDir'] as const) {
    const v = out[k];
    if (v !== undefined && !v.startsWith('/') && !v.startsWith('~/'))
      throw configError(
        `${field}.${k} must be an absolute path or start with ~/ (the host's home), got ${v}`,
      );
  }
  for (const [k, plain] of [
    ['passwordCommand', 'password'],
    ['passphraseCommand', 'passphrase'],
  ] as const) {
    const argv = optArgv(o, k, field);
    if (argv === undefined) continue;
    if (out[plain] !== undefined) throw configError(`${field}: set ${plain} or ${k}, not both`);
    out[k] = argv;
  }
  const policy = oneOf(o, 'hostKeyPolicy', field, ['strict', 'ask', 'accept-new', 'no'] as const);
  if (policy !== undefined) out.hostKeyPolicy = policy;
  const agent = optBoolean(o, 'useAgent', field);
  if (agent !== undefined) out.useAgent = agent;
  const history = validateHistoryConfig(o.history, `${field}.history`, ringBytes);
  if (history !== undefined) out.history = history;
  return out;
}

function validateLimits(raw: unknown): RelayLimits {
  const o = object(raw, 'limits');
  const d = DEFAULT_LIMITS;
  onlyKeys(o, Object.keys(d), 'limits');
  const ringBytes = integer(o, 'ringBytes', 'limits', 64 * KiB, MAX_RING_BYTES, d.ringBytes);
  return {
    ringBytes,
    // Unless given, a small ring bounds the background ring too.
    backgroundRingBytes: integer(
      o,
      'backgroundRingBytes',
      'limits',
      4 * KiB,
      MAX_RING_BYTES,
      Math.min(d.backgroundRingBytes, ringBytes),
    ),
    maxTerminals: integer(o, 'maxTerminals', 'limits', 1, 100_000, d.maxTerminals),
    contentBytes: integer(o, 'contentBytes', 'limits', 4 * KiB, 64 * MiB, d.contentBytes),
    replayActions: integer(o, 'replayActions', 'limits', 100, 10_000_000, d.replayActions),
    replayBytes: integer(o, 'replayBytes', 'limits', 64 * KiB, 1024 * MiB, d.replayBytes),
    maxMessageBytes: integer(o, 'maxMessageBytes', 'limits', 64 * KiB, 256 * MiB, d.maxMessageBytes),
    maxTerminalsPerHost: integer(o, 'maxTerminalsPerHost', 'limits', 1, 100_000, d.maxTerminalsPerHost),
    maxTerminalsPerClient: integer(o, 'maxTerminalsPerClient', 'limits', 1, 100_000, d.maxTerminalsPerClient),
    maxInputBytes: integer(o, 'maxInputBytes', 'limits', 1 * KiB, 16 * MiB, d.maxInputBytes),
    maxConnections: integer(o, 'maxConnections', 'limits', 1, 100_000, d.maxConnections),
  };
}

function validateFlowControl(raw: unknown): FlowControlConfig {
  const o = object(raw, 'flowControl');
  const d = DEFAULT_FLOW_CONTROL;
  onlyKeys(o, Object.keys(d), 'flowControl');
  const creditWindow = integer(o, 'creditWindow', 'flowControl', 16 * KiB, 256 * MiB, d.creditWindow);
  const stubPendingCap = integer(o, 'stubPendingCap', 'flowControl', 1 * MiB, 4096 * MiB, d.stubPendingCap);
  // Unless set, a fast link's window stops at what the stub may buffer, and never below the minimum.
  const maxDefault = Math.max(creditWindow, Math.min(d.creditWindowMax, stubPendingCap));
  const f: FlowControlConfig = {
    creditWindow,
    creditWindowMax: integer(o, 'creditWindowMax', 'flowControl', 16 * KiB, 256 * MiB, maxDefault),
    ackBytes: integer(o, 'ackBytes', 'flowControl', 1 * KiB, 256 * MiB, d.ackBytes),
    highWatermark: integer(o, 'highWatermark', 'flowControl', 16 * KiB, 1024 * MiB, d.highWatermark),
    lowWatermark: integer(o, 'lowWatermark', 'flowControl', 0, 1024 * MiB, d.lowWatermark),
    keepTailBytes: integer(o, 'keepTailBytes', 'flowControl', 4 * KiB, 512 * KiB, d.keepTailBytes),
    relayPendingCap: integer(o, 'relayPendingCap', 'flowControl', 1 * MiB, 4096 * MiB, d.relayPendingCap),
    stubPendingCap,
  };
  if (f.relayPendingCap < f.highWatermark) {
    throw configError(
      `flowControl.relayPendingCap (${f.relayPendingCap}) must be at least flowControl.highWatermark (${f.highWatermark})`,
    );
  }
  if (f.lowWatermark >= f.highWatermark) {
    throw configError(
      `flowControl.lowWatermark (${f.lowWatermark}) must be below flowControl.highWatermark (${f.highWatermark})`,
    );
  }
  if (f.ackBytes > f.lowWatermark) {
    throw configError(
      `flowControl.ackBytes (${f.ackBytes}) must not exceed flowControl.lowWatermark (${f.lowWatermark})`,
    );
  }
  if (f.creditWindowMax < f.creditWindow) {
    throw configError(
      `flowControl.creditWindowMax (${f.creditWindowMax}) must be at least flowControl.creditWindow (${f.creditWindow})`,
    );
  }
  if (f.creditWindowMax > f.stubPendingCap) {
    throw configError(
      `flowControl.creditWindowMax (${f.creditWindowMax}) must not exceed flowControl.stubPendingCap (${f.stubPendingCap})`,
    );
  }
  if (f.ackBytes * 2 > f.creditWindow) {
    throw configError(
      `flowControl.ackBytes (${f.ackBytes}) must be at most half of flowControl.creditWindow (${f.creditWindow})`,
    );
  }
  return f;
}

function validateOrigins(raw: unknown): string[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw))
    throw configError(`allowedOrigins must be an array of origins, got ${describe(raw)}`);
  return raw.map((v, i) => {
    let url: URL | undefined;
    try {
      url = typeof v === 'string' ? new URL(v) : undefined;
    } catch {
      url = undefined;
    }
    if (!url || url.origin === 'null' || url.origin !== v) {
      throw configError(
        `allowedOrigins[${i}] must be an origin like "https://example.com:8443" (scheme://host[:port], no path), got ${describe(v)}`,
      );
    }
    return v as string;
  });
}

/** Validates a parsed config object and fills in defaults; CONFIG_INVALID names the bad field. */
export function validateConfig(raw: unknown): RelayConfig {
  const top = object(raw ?? {}, 'config');
  onlyKeys(top, TOP_KEYS, 'config');
  const limits = validateLimits(top.limits);
  const hostsRaw = object(top.hosts, 'hosts');
  const hosts: Record<string, SshHostConfig> = {};
  for (const [name, h] of Object.entries(hostsRaw)) hosts[name] = validateHost(name, h, limits.ringBytes);
  const history = validateHistoryConfig(top.history, 'history', limits.ringBytes);
  const flowControl = validateFlowControl(top.flowControl);
  // The stub replays unacknowledged and kept output from its ring: both must fit in it.
  if (flowControl.keepTailBytes > limits.ringBytes) {
    throw configError(
      `flowControl.keepTailBytes (${flowControl.keepTailBytes}) must not exceed limits.ringBytes (${limits.ringBytes})`,
    );
  }
  if (limits.backgroundRingBytes > limits.ringBytes) {
    throw configError(
      `limits.backgroundRingBytes (${limits.backgroundRingBytes}) must not exceed limits.ringBytes (${limits.ringBytes})`,
    );
  }
  if (flowControl.creditWindow > limits.ringBytes) {
    throw configError(
      `flowControl.creditWindow (${flowControl.creditWindow}) must not exceed limits.ringBytes (${limits.ringBytes})`,
    );
  }
  return {
    listen: validateListen(top.listen),
    hosts,
    limits,
    flowControl,
    allowedOrigins: validateOrigins(top.allowedOrigins),
    agents: validateAgentsConfig(top.agents, limits.ringBytes),
    input: validateInput(top.input),
    ...(top.tls !== undefined ? { tls: validateTls(top.tls) } : {}),
    ...(history !== undefined ? { history } : {}),
  };
}

/** `$PTYRELAY_CONFIG`, else `~/.config/ptyrelay/config.json`. */
export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.PTYRELAY_CONFIG || join(env.HOME || homedir(), '.config', 'ptyrelay', 'config.json');
}

/**
 * Reads and validates the JSON config. Without `path`, a missing default file means "all
 * defaults"; an explicitly named file must exist. A file with a password or passphrase that the
 * group or others can read, or with a password command they can change, is refused
 * (INSECURE_FILE_MODE).
 */
export function loadConfig(path?: string): RelayConfig {
  const file = path ?? defaultConfigPath();
  if (!existsSync(file)) {
    if (path === undefined) return validateConfig({});
    throw configError(`config file ${file} does not exist`);
  }
  let raw: Obj;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8')) as Obj;
  } catch (err) {
    throw configError(`config file ${file} is not valid JSON: ${(err as Error).message}`);
  }
  let config: RelayConfig;
  try {
    config = validateConfig(raw);
  } catch (err) {
    throw configError(`${file}: ${(err as Error).message}`);
  }
  const hosts = Object.values(config.hosts);
  assertSecretFileMode(file, {
    secrets: hosts.some((h) => h.password !== undefined || h.passphrase !== undefined),
    commands: hosts.some((h) => h.passwordCommand !== undefined || h.passphraseCommand !== undefined),
  });
  return withPathsRelativeTo(config, dirname(resolve(file)));
}

/** Host key and identity files given as relative paths are relative to the config file's directory. */
function withPathsRelativeTo(config: RelayConfig, dir: string): RelayConfig {
  const fix = (p: string | undefined) =>
    p === undefined || isAbsolute(p) || p.startsWith('~') ? p : join(dir, p);
  for (const h of Object.values(config.hosts)) {
    if (h.identityFile !== undefined) h.identityFile = fix(h.identityFile);
    if (h.knownHostsFile !== undefined) h.knownHostsFile = fix(h.knownHostsFile);
  }
  return config;
}
