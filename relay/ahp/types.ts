/**
 * Agent Host Protocol (AHP) types of the channels ptyrelay serves: the root channel's terminal
 * catalog and the terminal channel. Shapes follow microsoft/agent-host-protocol
 * (`types/channels-terminal/*`, `types/common/*`); see docs/ahp.md for how they map to ptyrelay.
 */

import type { HostUnavailable } from '../../provider/client/relay-protocol.js';
import type { TerminalClaim } from '../terminals/terminal-registry.js';

export type { TerminalClaim };

/** A URI string (`ahp-root://`, `ptyrelay-terminal:/<host>/<id>`, `file:///…`). */
export type URI = string;

/** The root channel. */
export const ROOT_URI = 'ahp-root://';
/** Scheme of ptyrelay terminal channels: `ptyrelay-terminal:/<host>/<id>`. */
export const TERMINAL_SCHEME = 'ptyrelay-terminal:';
/** Protocol versions this server speaks (SemVer, caret-compatible ranges). */
export const SUPPORTED_PROTOCOL_VERSIONS = ['0.1.0'] as const;

/** JSON-RPC error codes used by the AHP channel. */
export const AhpErrorCodes = {
  /** No offered protocol version is acceptable; `data.supportedVersions` lists ours. */
  UnsupportedProtocolVersion: -32005,
} as const;

// ─── Terminal state ──────────────────────────────────────────────────────────

/** Output outside any detected command (or from terminals without command detection). */
export interface TerminalUnclassifiedPart {
  type: 'unclassified';
  /** Accumulated VT output. */
  value: string;
}

/** One detected command: its command line and the output it produced. */
export interface TerminalCommandPart {
  type: 'command';
  commandId: string;
  commandLine: string;
  /** Accumulated VT output while `isComplete` is false. */
  output: string;
  /** Unix time (ms) when execution started. */
  timestamp: number;
  isComplete: boolean;
  exitCode?: number;
  durationMs?: number;
}

export type TerminalContentPart = TerminalUnclassifiedPart | TerminalCommandPart;

/** Full state of one terminal channel (the subscribe snapshot). */
export interface TerminalState {
  title: string;
  /** `file://` URI of the working directory. */
  cwd?: URI;
  cols?: number;
  rows?: number;
  content: TerminalContentPart[];
  exitCode?: number;
  claim: TerminalClaim;
  /** True once the shell announced command boundaries (shell integration). */
  supportsCommandDetection?: boolean;
}

/** Catalog entry on the root state. */
export interface TerminalInfo {
  resource: URI;
  title: string;
  claim: TerminalClaim;
  exitCode?: number;
}

/** The root channel state as served by ptyrelay (no agents: ptyrelay hosts terminals only). */
export interface RootState {
  agents: unknown[];
  terminals: TerminalInfo[];
  /**
   * ptyrelay's addition: the hosts whose link is down now, with state and cause (as in
   * `ptyrelay/list`); their terminals are not in `terminals` until they are published again.
   */
  unavailableHosts: HostUnavailable[];
}

// ─── Actions ─────────────────────────────────────────────────────────────────

export interface TerminalDataAction {
  type: 'terminal/data';
  data: string;
}
export interface TerminalInputAction {
  type: 'terminal/input';
  data: string;
}
export interface TerminalResizedAction {
  type: 'terminal/resized';
  cols: number;
  rows: number;
}
export interface TerminalClaimedAction {
  type: 'terminal/claimed';
  claim: TerminalClaim;
}
export interface TerminalTitleChangedAction {
  type: 'terminal/titleChanged';
  title: string;
}
export interface TerminalCwdChangedAction {
  type: 'terminal/cwdChanged';
  cwd: URI;
}
export interface TerminalExitedAction {
  type: 'terminal/exited';
  exitCode?: number;
}
export interface TerminalClearedAction {
  type: 'terminal/cleared';
}
export interface TerminalCommandDetectionAvailableAction {
  type: 'terminal/commandDetectionAvailable';
}
export interface TerminalCommandExecutedAction {
  type: 'terminal/commandExecuted';
  commandId: string;
  commandLine: string;
  timestamp: number;
}
export interface TerminalCommandFinishedAction {
  type: 'terminal/commandFinished';
  commandId: string;
  exitCode?: number;
  durationMs?: number;
}

/** Every action of the terminal channel. */
export type TerminalAction =
  | TerminalDataAction
  | TerminalInputAction
  | TerminalResizedAction
  | TerminalClaimedAction
  | TerminalTitleChangedAction
  | TerminalCwdChangedAction
  | TerminalExitedAction
  | TerminalClearedAction
  | TerminalCommandDetectionAvailableAction
  | TerminalCommandExecutedAction
  | TerminalCommandFinishedAction;

/** Terminal actions a client may dispatch. */
export type TerminalClientAction =
  | TerminalInputAction
  | TerminalResizedAction
  | TerminalClaimedAction
  | TerminalTitleChangedAction
  | TerminalClearedAction;

/** Action types clients may dispatch; any other type is ignored. */
export const CLIENT_DISPATCHABLE_TYPES: ReadonlySet<string> = new Set<TerminalClientAction['type']>([
  'terminal/input',
  'terminal/resized',
  'terminal/claimed',
  'terminal/titleChanged',
  'terminal/cleared',
]);

/** True for an action type clients may dispatch. */
export function isClientActionType(type: string): type is TerminalClientAction['type'] {
  return CLIENT_DISPATCHABLE_TYPES.has(type);
}

/**
 * A client action whose payload failed its schema (ahp-schemas.ts), echoed back to its sender
 * rejected: only its type, the one field that was checked, is sent back.
 */
export interface MalformedClientAction {
  type: TerminalClientAction['type'];
}

/** The root catalog was replaced. */
export interface RootTerminalsChangedAction {
  type: 'root/terminalsChanged';
  terminals: TerminalInfo[];
}

/** ptyrelay's addition: the hosts whose link is down changed (replaced whole). */
export interface RootHostsChangedAction {
  type: 'root/hostsChanged';
  unavailableHosts: HostUnavailable[];
}

export type RootAction = RootTerminalsChangedAction | RootHostsChangedAction;

/** Any action ptyrelay sends. */
export type StateAction = TerminalAction | RootAction;

// ─── Envelopes and messages ──────────────────────────────────────────────────

/** Identifies the client that dispatched an action. */
export interface ActionOrigin {
  clientId: string;
  clientSeq: number;
}

/** Server → client `action` notification params. */
export interface ActionEnvelope {
  channel: URI;
  /** A MalformedClientAction only in a rejection (`rejectionReason` set). */
  action: StateAction | MalformedClientAction;
  /** Strictly increasing per server. */
  serverSeq: number;
  origin: ActionOrigin | undefined;
  rejectionReason?: string;
}

/** State of one channel at `fromSeq` (the server seq it reflects). */
export interface Snapshot {
  resource: URI;
  state: RootState | TerminalState;
  fromSeq: number;
}

/** Optional capabilities a client declares in `initialize`. */
export interface AhpClientCapabilities {
  /** ptyrelay: deliver terminal output as binary stub-link Data frames instead of `terminal/data` JSON. */
  rawData?: boolean;
  [key: string]: unknown;
}

export interface InitializeParams {
  channel?: URI;
  protocolVersions: string[];
  clientId: string;
  initialSubscriptions?: URI[];
  capabilities?: AhpClientCapabilities;
}

/** Capabilities the server grants on this connection. */
export interface AhpServerCapabilities {
  /** True when the raw-bytes fast path is on for this connection. */
  rawData: boolean;
  /** Additive `createTerminal` params ptyrelay accepts. */
  createTerminal: { host: true; command: true; args: true };
  /** Host names terminals can be created on. */
  hosts: string[];
}

export interface InitializeResult {
  protocolVersion: string;
  serverSeq: number;
  snapshots: Snapshot[];
  capabilities: AhpServerCapabilities;
  serverInfo: { name: string; version?: string };
}

export interface SubscribeResult {
  snapshot: Snapshot;
}

export interface CreateTerminalParams {
  channel?: URI;
  claim: TerminalClaim;
  name?: string;
  /** A `file://` URI or an absolute path on the host. */
  cwd?: string;
  cols?: number;
  rows?: number;
  /** ptyrelay: host to create the terminal on (default `local`, or the channel's host). */
  host?: string;
  /** ptyrelay: program to run instead of the login shell. */
  command?: string;
  args?: string[];
}

export interface CreateTerminalResult {
  channel: URI;
}

export interface DispatchActionParams {
  channel: URI;
  clientSeq: number;
  action: { type: string; [key: string]: unknown };
}

export interface ReconnectParams {
  clientId: string;
  lastSeenServerSeq: number;
  subscriptions: URI[];
}

export type ReconnectResult =
  | { type: 'replay'; actions: ActionEnvelope[]; missing: URI[] }
  | { type: 'snapshot'; snapshots: Snapshot[] };
