import * as z from 'zod/mini';
import { DEFAULT_MAX_QUEUE_AGE_MS } from '../../provider/input/input-queue.js';
import { DEFAULT_PALETTE, type TerminalPalette } from '../../provider/terminal-queries.js';
import { type AgentsConfig, agentsConfigSchema, agentsProblem } from '../agents/agent-config.js';
import {
  addIssue,
  anObject,
  type ConfigProblem,
  describe,
  integer,
  settings,
  text,
} from '../core/config-validate.js';
import { type HistoryConfig, historyConfigSchema, historyProblem } from '../core/history-config.js';
import { type LspConfig, lspConfigOf, lspHostsProblem, lspSectionSchema } from '../core/lsp-config.js';
import { hostConfigSchema, type SshHostConfig } from '../ssh/host-config.js';

/**
 * The relay config's shape, its defaults and its schema (docs/config.md). Each section's schema
 * checks its own values and their relations; the check at the end those across sections.
 */

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

/** Input queued while a host is unreachable (docs/config.md, `input`). */
export interface InputConfig {
  /** Queued input older than this is discarded instead of sent, and its sender is told. */
  maxQueueAgeMs: number;
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
  /** What terminals answer about themselves: the colours of OSC 10/11/12 (docs/config.md, `terminal`). */
  terminal: { palette: TerminalPalette };
  /** Serve https/wss with this certificate and key (docs/config.md, `tls`). */
  tls?: { cert: string; key: string };
  /** Output history of the daemons this relay starts, every host (docs/config.md, `history`). */
  history?: HistoryConfig;
  /** Code navigation per host (docs/lsp.md): host → its providers; empty unless configured. */
  lsp: LspConfig;
}

export const DEFAULT_INPUT: InputConfig = { maxQueueAgeMs: DEFAULT_MAX_QUEUE_AGE_MS };

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

const listenSchema = settings({
  host: z._default(text(), DEFAULT_LISTEN.host),
  port: z._default(integer(0, 65535), DEFAULT_LISTEN.port),
});

const tlsSchema = z.pipe(
  settings({ cert: z.optional(text()), key: z.optional(text()) }),
  z.transform(({ cert, key }, payload) => {
    if (cert !== undefined && key !== undefined) return { cert, key };
    addIssue(payload, [], 'needs both cert and key (PEM file paths)');
    return z.NEVER;
  }),
);

const hostsSchema = z.pipe(
  anObject().check((payload) => {
    for (const name of Object.keys(payload.value)) {
      if (name === LOCAL_HOST) addIssue(payload, [name], 'is reserved for the built-in local host');
      else if (!HOST_NAME.test(name))
        addIssue(payload, [name], ": host names may only use letters, digits, '.', '_' and '-'");
    }
  }),
  z.record(z.string(), hostConfigSchema),
);

const d = DEFAULT_LIMITS;
const limitsSchema = z
  .pipe(
    settings({
      ringBytes: z._default(integer(64 * KiB, MAX_RING_BYTES), d.ringBytes),
      backgroundRingBytes: z.optional(integer(4 * KiB, MAX_RING_BYTES)),
      maxTerminals: z._default(integer(1, 100_000), d.maxTerminals),
      contentBytes: z._default(integer(4 * KiB, 64 * MiB), d.contentBytes),
      replayActions: z._default(integer(100, 10_000_000), d.replayActions),
      replayBytes: z._default(integer(64 * KiB, 1024 * MiB), d.replayBytes),
      maxMessageBytes: z._default(integer(64 * KiB, 256 * MiB), d.maxMessageBytes),
      maxTerminalsPerHost: z._default(integer(1, 100_000), d.maxTerminalsPerHost),
      maxTerminalsPerClient: z._default(integer(1, 100_000), d.maxTerminalsPerClient),
      maxInputBytes: z._default(integer(1 * KiB, 16 * MiB), d.maxInputBytes),
      maxConnections: z._default(integer(1, 100_000), d.maxConnections),
    }),
    // Unless given, a small ring bounds the background ring too.
    z.transform(
      (l): RelayLimits => ({
        ...l,
        backgroundRingBytes: l.backgroundRingBytes ?? Math.min(d.backgroundRingBytes, l.ringBytes),
      }),
    ),
  )
  .check((payload) => {
    const l = payload.value;
    if (l.backgroundRingBytes > l.ringBytes)
      addIssue(
        payload,
        ['backgroundRingBytes'],
        `(${l.backgroundRingBytes}) must not exceed limits.ringBytes (${l.ringBytes})`,
      );
  });

/** `a WORDS b` must hold between two flow-control settings, in the order they are checked. */
const FLOW_RELATIONS: [
  keyof FlowControlConfig,
  string,
  keyof FlowControlConfig,
  (a: number, b: number) => boolean,
][] = [
  ['relayPendingCap', 'must be at least', 'highWatermark', (a, b) => a >= b],
  ['lowWatermark', 'must be below', 'highWatermark', (a, b) => a < b],
  ['ackBytes', 'must not exceed', 'lowWatermark', (a, b) => a <= b],
  ['creditWindowMax', 'must be at least', 'creditWindow', (a, b) => a >= b],
  ['creditWindowMax', 'must not exceed', 'stubPendingCap', (a, b) => a <= b],
  ['ackBytes', 'must be at most half of', 'creditWindow', (a, b) => a * 2 <= b],
];

const f = DEFAULT_FLOW_CONTROL;
const flowControlSchema = z
  .pipe(
    settings({
      creditWindow: z._default(integer(16 * KiB, 256 * MiB), f.creditWindow),
      creditWindowMax: z.optional(integer(16 * KiB, 256 * MiB)),
      ackBytes: z._default(integer(1 * KiB, 256 * MiB), f.ackBytes),
      highWatermark: z._default(integer(16 * KiB, 1024 * MiB), f.highWatermark),
      lowWatermark: z._default(integer(0, 1024 * MiB), f.lowWatermark),
      keepTailBytes: z._default(integer(4 * KiB, 512 * KiB), f.keepTailBytes),
      relayPendingCap: z._default(integer(1 * MiB, 4096 * MiB), f.relayPendingCap),
      stubPendingCap: z._default(integer(1 * MiB, 4096 * MiB), f.stubPendingCap),
    }),
    // Unless set, a fast link's window stops at what the stub may buffer, and never below the minimum.
    z.transform(
      (c): FlowControlConfig => ({
        ...c,
        creditWindowMax:
          c.creditWindowMax ?? Math.max(c.creditWindow, Math.min(f.creditWindowMax, c.stubPendingCap)),
      }),
    ),
  )
  .check((payload) => {
    const c = payload.value;
    const broken = FLOW_RELATIONS.find(([a, , b, holds]) => !holds(c[a], c[b]));
    if (!broken) return;
    const [a, words, b] = broken;
    addIssue(payload, [a], `(${c[a]}) ${words} flowControl.${b} (${c[b]})`);
  });

const originSchema = z.string().check(
  z.refine(
    (v) => {
      try {
        const url = new URL(v);
        return url.origin !== 'null' && url.origin === v;
      } catch {
        return false;
      }
    },
    {
      error: (iss) =>
        `must be an origin like "https://example.com:8443" (scheme://host[:port], no path), got ${describe(iss.input)}`,
    },
  ),
);

const colourSchema = z.string().check(
  z.regex(/^#[0-9a-fA-F]{6}$/, {
    error: (iss) => `must be a colour like "#1e1e1e", got ${describe(iss.input)}`,
  }),
);

/** What terminals report about themselves (docs/config.md, `terminal`). */
const terminalSchema = settings({
  palette: z.prefault(
    settings({
      foreground: z._default(colourSchema, DEFAULT_PALETTE.foreground),
      background: z._default(colourSchema, DEFAULT_PALETTE.background),
      cursor: z._default(colourSchema, DEFAULT_PALETTE.cursor),
    }),
    {},
  ),
});

const inputSchema = settings({
  // At least a second (a keystroke in flight is older than that only during an outage); at most a day.
  maxQueueAgeMs: z._default(integer(1000, 86_400_000), DEFAULT_INPUT.maxQueueAgeMs),
});

/**
 * The whole file. Across sections: the stub replays unacknowledged and kept output from its ring,
 * so both must fit in it, as must every history's tail and an agent's read.
 */
export const relayConfigSchema = z.pipe(
  settings({
    $schema: z.optional(z.unknown()),
    listen: z.prefault(listenSchema, {}),
    hosts: z.prefault(hostsSchema, {}),
    limits: z.prefault(limitsSchema, {}),
    flowControl: z.prefault(flowControlSchema, {}),
    allowedOrigins: z._default(
      z.array(originSchema, { error: (iss) => `must be an array of origins, got ${describe(iss.input)}` }),
      [],
    ),
    agents: z.prefault(agentsConfigSchema, {}),
    input: z.prefault(inputSchema, {}),
    terminal: z.prefault(terminalSchema, {}),
    tls: z.optional(tlsSchema),
    history: z.optional(historyConfigSchema),
    lsp: z.optional(lspSectionSchema),
  }).check((payload) => {
    const c = payload.value;
    const ring = c.limits.ringBytes;
    const problems: (ConfigProblem | undefined)[] = [
      lspHostsProblem(c.lsp, [LOCAL_HOST, ...Object.keys(c.hosts)]),
      ...Object.entries(c.hosts).map(
        ([name, h]) => h.history && historyProblem(h.history, ['hosts', name, 'history'], ring),
      ),
      c.history && historyProblem(c.history, ['history'], ring),
      ...(['keepTailBytes', 'creditWindow'] as const).map((k) =>
        c.flowControl[k] > ring
          ? {
              path: ['flowControl', k],
              message: `(${c.flowControl[k]}) must not exceed limits.ringBytes (${ring})`,
            }
          : undefined,
      ),
      agentsProblem(c.agents, ring),
    ];
    const first = problems.find((p) => p !== undefined);
    if (first) addIssue(payload, first.path, first.message);
  }),
  z.transform(
    (c): RelayConfig => ({
      listen: c.listen,
      hosts: c.hosts,
      limits: c.limits,
      flowControl: c.flowControl,
      allowedOrigins: c.allowedOrigins,
      agents: c.agents,
      input: c.input,
      terminal: c.terminal,
      ...(c.tls !== undefined ? { tls: c.tls } : {}),
      ...(c.history !== undefined ? { history: c.history } : {}),
      lsp: lspConfigOf(c.lsp),
    }),
  ),
);
