import type {
  AgentCommandsResult,
  AgentReadResult,
  AgentSendResult,
  AgentTag,
  ColdRestore,
  ForegroundProcess,
  PtyAttachOptions,
  PtyExitInfo,
  PtyFact,
  PtyProcessInfo,
  ScreenSnapshot,
  ShutdownOptions,
} from '../contract.js';
import type { PtyRelayErrorShape } from '../errors.js';
import type { LspQueryResult } from '../lsp-seam.js';
import type { AgentReadParams, AgentSendParams } from './agent-messages.js';
import type { CommandsParams } from './command-messages.js';
import type { LspQueryParams } from './lsp-messages.js';

/**
 * JSON control messages of the stub link. Data and input travel in binary frames
 * (frame-codec.ts); everything else is one of these.
 */

/** Major version of the stub link protocol; a daemon serves exactly one major. */
export const STUB_PROTOCOL_VERSION = 1;

export interface HelloMessage {
  t: 'hello';
  protocol: number;
  buildId: string;
  /** Who is speaking, for logs ('relay', 'cli', 'stub-daemon'). */
  role: string;
  pid?: number;
  version?: string;
  /** Relay identity: credit claims are per linkId and survive reconnects (and relay restarts that keep it). */
  linkId?: string;
  /** Input sequence space; resent input frames are dropped per (linkId, inputEpoch). */
  inputEpoch?: string;
  /** The relay is of a newer build and uses this daemon only for its existing sessions. */
  legacy?: boolean;
  /**
   * Daemon only: `host` when the ids it mints are unique among every daemon of its user on the host
   * (any build, across restarts), so a relay names its terminals `<host>/<id>` whichever daemon
   * serves them. Absent from older builds, whose ids are unique per daemon only.
   */
  idScope?: 'host';
  /**
   * Either end: it takes credit and input acknowledgements as binary frames (FrameType.Ack and
   * InputAck), so the peer sends those instead of JSON. Absent from older builds, which get JSON.
   */
  binaryAcks?: boolean;
  /**
   * Daemon only: it takes InputFrom frames and applies each client's input at most once per
   * terminal whichever link (relay) it came through, so a client's resend through another relay is
   * not typed twice. Absent from older builds, which de-duplicate per link only.
   */
  inputOrigin?: boolean;
}

/** Spawn as the stub sees it: ids are local (`pty-1`), no AbortSignal. */
export interface StubSpawnParams {
  cols: number;
  rows: number;
  cwd?: string;
  env?: Record<string, string>;
  envToDelete?: string[];
  command?: string;
  args?: string[];
  name?: string;
  paneKey?: string;
  requestId?: string;
  /** Client-chosen name of the session (an AHP channel URI), unique in the daemon. */
  alias?: string;
  /** The owning agent of an agent terminal (PtySpawnOptions.agent). */
  agent?: AgentTag;
  /** Who owns a client terminal (PtySpawnOptions.owner). */
  owner?: string;
}

/** A page of output history: the blob holds `bytes` bytes from `fromSeq`. */
export interface StubHistoryPage {
  /** Seq of the page's first byte: the asked seq, or the oldest one held if that is gone. */
  fromSeq: number;
  bytes: number;
  /** Oldest seq held. */
  startSeq: number;
  /** Seq of the next byte the session will write. */
  headSeq: number;
}

export interface StubAttachResult {
  id: string;
  pid: number;
  incarnationId: string;
  cols: number;
  rows: number;
  /**
   * Where the stream of DATA frames after this reply continues: the end of the replay in the
   * blob. Until issue 19 that was always the head; a replay from the output log on disk sends
   * the older bytes as DATA frames after the reply, so `seq` may be below the head.
   */
  seq: number;
  generation: 'continued' | 'reset';
  /** Oldest seq the session's history (RAM tail and log) still holds. */
  historyStartSeq?: number;
  /** The attached JSON-blob frame's blob holds replay bytes of this length. */
  replayBytes?: number;
  /** Seq of the first replay byte. */
  replayFromSeq?: number;
  snapshot?: ScreenSnapshot;
  exited?: PtyExitInfo;
  title?: string;
  cwd?: string;
  reused?: boolean;
  exitedBeforeSpawnReply?: boolean;
  sessionExpired?: boolean;
  alias?: string;
  /** Who owns the terminal (PtySpawnOptions.owner), if anyone does. */
  owner?: string;
  /** With sessionExpired: what the daemon saved of the terminal before its host went down. */
  coldRestore?: ColdRestore;
}

export interface StubMethods {
  spawn: { params: StubSpawnParams; result: StubAttachResult };
  attach: { params: { id: string } & PtyAttachOptions; result: StubAttachResult };
  detach: { params: { id: string }; result: Record<string, never> };
  resize: { params: { id: string; cols: number; rows: number }; result: Record<string, never> };
  shutdown: { params: { id: string } & ShutdownOptions; result: Record<string, never> };
  signal: { params: { id: string; signal: string }; result: Record<string, never> };
  getCwd: { params: { id: string }; result: { cwd?: string } };
  getForegroundProcess: { params: { id: string }; result: { process?: ForegroundProcess } };
  hasChildProcesses: { params: { id: string }; result: { value: boolean } };
  list: { params: Record<string, never>; result: { sessions: Omit<PtyProcessInfo, 'host'>[] } };
  probe: { params: { id: string }; result: { alive: boolean } };
  snapshot: { params: { id: string; scrollbackRows?: number }; result: ScreenSnapshot };
  clear: { params: { id: string }; result: Record<string, never> };
  pause: { params: { id: string }; result: Record<string, never> };
  resume: { params: { id: string }; result: Record<string, never> };
  setBackgrounded: { params: { id: string; background: boolean }; result: Record<string, never> };
  daemonInfo: {
    params: Record<string, never>;
    result: {
      pid: number;
      buildId: string;
      protocol: number;
      sessions: number;
      connections: number;
      startedAt: number;
      /** The daemon's resident memory, bytes (absent from daemons before 0.1.0's heap trimming). */
      rss?: number;
      /** Whether the daemon trims its malloc heaps, and what that gave back (agent-stub/native/heap-trim.ts). */
      heapTrim?: { addon: boolean; trims: number; releasedBytes: number };
    };
  };
  /** Writes `data` and waits for an end reason (agent-messages.ts; docs/agents.md). */
  agentSend: { params: AgentSendParams; result: AgentSendResult };
  /** A page of a session's text as plain lines. */
  agentRead: { params: AgentReadParams; result: AgentReadResult };
  /** The session's command records, newest first (command-messages.ts). */
  commands: { params: CommandsParams; result: AgentCommandsResult };
  /** A page of the session's output history (RAM tail and log): the bytes travel as the blob. */
  readHistory: {
    params: { id: string; fromSeq?: number; maxBytes?: number };
    result: StubHistoryPage;
  };
  /** Ends every session and the daemon itself (tests, `ptyrelay` admin). */
  daemonShutdown: { params: Record<string, never>; result: Record<string, never> };
  /** The owners of these agent terminals were connected at `seenAt` (ids unknown are skipped). */
  agentSeen: { params: { ids: string[]; seenAt: number }; result: { updated: number } };
  /**
   * Records `owner` as the terminal's owner (`ifUnowned`: only when it has none, so the first of
   * several relays adopting it wins); answers who owns it now.
   */
  claim: { params: { id: string; owner: string; ifUnowned?: boolean }; result: { owner: string } };
  /** One code-navigation query with its host's provider config (lsp-messages.ts; docs/lsp.md). */
  lspQuery: { params: LspQueryParams; result: LspQueryResult };
  /** Cancels the `lspQuery` of that `queryId` (its provider sees its AbortSignal fire). */
  lspCancel: { params: { queryId: string }; result: { cancelled: boolean } };
  /** The nearest ancestor of a file holding `.git`, or null. */
  lspRoot: { params: { filePath: string }; result: { root: string | null } };
}

export type StubMethod = keyof StubMethods;

export interface RequestMessage<M extends StubMethod = StubMethod> {
  t: 'req';
  rid: number;
  method: M;
  params: StubMethods[M]['params'];
}

export interface ResponseMessage {
  t: 'res';
  rid: number;
  result?: unknown;
  error?: PtyRelayErrorShape;
}

/** Input acknowledgement: every input frame with inputSeq <= upTo was applied (or failed, listed). */
export interface InputAckMessage {
  t: 'inputAck';
  upTo: number;
  failed?: { inputSeq: number; error: PtyRelayErrorShape }[];
}

export interface FactEventMessage {
  t: 'fact';
  id: string;
  incarnationId: string;
  seq: number;
  fact: PtyFact;
}

export interface ExitEventMessage {
  t: 'exit';
  id: string;
  incarnationId: string;
  exitCode: number;
  signal?: string;
  /** Seq at which output ended. */
  seq: number;
}

/** Credit: the relay's consumer has taken everything of `id` before `seq`. */
export interface AckMessage {
  t: 'ack';
  id: string;
  seq: number;
}

/** Heartbeat probe and answer. */
export interface PingMessage {
  t: 'ping' | 'pong';
  n: number;
}

/** The relay is leaving on purpose: its credit claims end now instead of after the grace period. */
export interface GoodbyeMessage {
  t: 'goodbye';
}

/**
 * Daemon only: it ends on request (`daemonShutdown`, `ptyrelay daemons stop`) and its sessions end
 * with it. Sent to every link just before the daemon closes them: a link that gets it does not
 * reconnect (which would start a new daemon in its place) until it is used again. Older builds
 * never send it; their links reconnect as after any drop.
 */
export interface StoppingMessage {
  t: 'stopping';
}

/** A background stream event (keep-tail thinning): backgroundMarker, dataGap, or a fact from dropped output. */
export interface BackgroundEventMessage {
  t: 'bg';
  id: string;
  incarnationId: string;
  event:
    | { type: 'backgroundMarker'; background: boolean; seq: number; snapshot?: ScreenSnapshot }
    | { type: 'dataGap'; droppedBytes: number; fromSeq: number; toSeq: number }
    | { type: 'fact'; seq: number; fact: PtyFact | { type: 'exit'; exitCode: number; signal?: string } };
}

export type StubToClientMessage =
  | BackgroundEventMessage
  | HelloMessage
  | ResponseMessage
  | InputAckMessage
  | FactEventMessage
  | ExitEventMessage
  | StoppingMessage;
export type ClientToStubMessage = HelloMessage | RequestMessage | AckMessage | PingMessage | GoodbyeMessage;

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
