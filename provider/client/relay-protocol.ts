import type {
  ForegroundProcess,
  LinkCause,
  LinkState,
  PtyFact,
  PtyProcessInfo,
  PtySpawnOptions,
  PtySpawnResult,
  ScreenSnapshot,
} from '../contract.js';
import type { PtyRelayErrorShape } from '../errors.js';

/**
 * Wire shapes of the `ptyrelay/*` API that RelayClient speaks to the relay's WebSocket service
 * (JSON-RPC 2.0 in text frames; output and input in binary frames of provider/wire/frame-codec).
 * Shared by the server extension (relay/service/pty-extension.ts) and the client. See
 * docs/relay-client.md.
 */

/** Version of the `ptyrelay/*` API; `hello` answers with the server's. */
export const RELAY_API_VERSION = 1;

/** JSON-RPC methods (client → relay requests). */
export const RelayMethod = {
  hello: 'ptyrelay/hello',
  hosts: 'ptyrelay/hosts',
  spawn: 'ptyrelay/spawn',
  attach: 'ptyrelay/attach',
  detach: 'ptyrelay/detach',
  resize: 'ptyrelay/resize',
  shutdown: 'ptyrelay/shutdown',
  signal: 'ptyrelay/signal',
  getCwd: 'ptyrelay/getCwd',
  getForegroundProcess: 'ptyrelay/getForegroundProcess',
  hasChildProcesses: 'ptyrelay/hasChildProcesses',
  list: 'ptyrelay/list',
  probe: 'ptyrelay/probe',
  snapshot: 'ptyrelay/snapshot',
  /** `{ id, fromSeq?, maxBytes? }` → a page of the terminal's raw output history (`data` base64). */
  history: 'ptyrelay/history',
  clear: 'ptyrelay/clear',
  pause: 'ptyrelay/pause',
  resume: 'ptyrelay/resume',
  setBackgrounded: 'ptyrelay/setBackgrounded',
  /** Agent send: `{ id, data, timeoutMs, idleMs? }` → AgentSendResult (never retried: it types). */
  agentSend: 'ptyrelay/agentSend',
  /** Agent read: `{ id, offset? | from?, count?, command? }` → AgentReadResult. */
  agentRead: 'ptyrelay/agentRead',
  /** `{ id, count? }` → AgentCommandsResult: the terminal's command records, newest first. */
  commands: 'ptyrelay/commands',
  /** `{host}` → {@link HostKeyInfo}: the key a host presents now (no login) and what known_hosts says. */
  hostKey: 'ptyrelay/hostKey',
  /** `{host, fingerprint, replace?}` → {@link HostKeyInfo}: records the key the person confirmed. */
  trustHostKey: 'ptyrelay/trustHostKey',
  /** Admin: `{scope, name?, hosts?, terminal?, ttl?}` → `{token, record}` (the token is shown once). */
  tokenCreate: 'ptyrelay/tokenCreate',
  /** Admin: `{}` → `{tokens}` (never the tokens themselves). */
  tokenList: 'ptyrelay/tokenList',
  /** Admin: `{name}` → `{revoked}`; connections that used it are closed within a second. */
  tokenRevoke: 'ptyrelay/tokenRevoke',
  daemons: 'ptyrelay/daemons',
  stopDaemon: 'ptyrelay/stopDaemon',
  /** `{host, query}` → LspQueryResult: one code-navigation query (docs/lsp.md; 0-based UTF-16 positions). */
  lspQuery: 'ptyrelay/lspQuery',
  /** `{host, filePath}` → `{root}`: the nearest ancestor holding `.git` on that host, or null. */
  lspRoot: 'ptyrelay/lspRoot',
} as const;

/** A host's presented key and its standing in known_hosts (`ptyrelay/hostKey`, `ptyrelay/trustHostKey`). */
export interface HostKeyInfo {
  /** `host:port` the key was read from. */
  address: string;
  keyType: string;
  /** SHA256 fingerprint of the presented key. */
  presented: string;
  verdict: 'ok' | 'unknown' | 'mismatch' | 'revoked';
  /** Fingerprints known_hosts holds for the host (on a mismatch). */
  known: string[];
  /** The known_hosts file a trusted key is recorded in. */
  file: string;
}

/** JSON-RPC notifications, in both directions. */
export const RelayNotification = {
  /** client → relay: credit ack `{id, seq}` (manual flow control). */
  ack: 'ptyrelay/ack',
  /** relay → client: input frames up to `upTo` were applied (or failed, listed in `failed`). */
  inputAck: 'ptyrelay/inputAck',
  fact: 'ptyrelay/fact',
  exit: 'ptyrelay/exit',
  linkState: 'ptyrelay/linkState',
  reattach: 'ptyrelay/reattach',
  background: 'ptyrelay/background',
  /** relay → client: a step of connecting to a host or deploying its stub ({@link HostProgress}). */
  hostProgress: 'ptyrelay/hostProgress',
} as const;

/** `ptyrelay/hostProgress` params: what the relay is doing to reach a host. */
export interface HostProgress {
  host: string;
  /** connect, connected, probe, check, lock, upload, verify, install, gc, done, link. */
  step: string;
  /** One human-readable line. */
  message: string;
  /** Upload: bytes sent so far and in all. */
  bytes?: number;
  totalBytes?: number;
}

/** `ptyrelay/hello` params: who is speaking. Must be the first call on a connection. */
export interface HelloParams {
  /** Claim identity: terminals this client spawns or adopts are claimed as `client:<clientId>`. */
  clientId: string;
  /**
   * Names this client object's input sequence space (default: clientId). Two processes sharing a
   * clientId (e.g. CLI invocations) must use different instanceIds.
   */
  instanceId?: string;
}

/** `ptyrelay/hello` result. */
export interface HelloResult {
  api: number;
  /** Random per relay process: a change tells the client it reconnected to a restarted relay. */
  serverInstanceId: string;
  clientId: string;
  /**
   * `fresh`: the relay has no record of this instance's input (first contact, relay restarted, or
   * its record expired), so frames sent before cannot be de-duplicated.
   */
  input: 'fresh' | 'known';
  /**
   * The relay forwards each input frame's origin (this client instance and its input seq) to
   * daemons that apply it at most once, whichever relay process forwarded it: frames sent to an
   * earlier relay process may be resent (as InputResent frames). Absent from older relays.
   */
  inputOrigin?: boolean;
}

/** One host of the relay (`ptyrelay/hosts`) and the relay's link state to it. */
export interface HostInfo {
  name: string;
  state: LinkState;
}

/** `ptyrelay/spawn` params: the spawn options minus the AbortSignal, plus flow-control mode. */
export type SpawnParams = Omit<PtySpawnOptions, 'signal'> & { manualAck?: boolean };

/** `ptyrelay/attach` params. */
export interface AttachParams {
  id: string;
  fromSeq?: number;
  expectedIncarnationId?: string;
  /** The client acknowledges data itself with `ptyrelay/ack` (else the relay credits on send). */
  manualAck?: boolean;
  /**
   * The viewer keeps the terminal in the background (e.g. a hidden tab re-attaching). Default:
   * it views it, which brings the terminal out of the background other viewers asked for.
   */
  background?: boolean;
}

/**
 * Spawn/attach result on the wire. The replay bytes are not in the JSON: the relay sends them as
 * one binary Data frame (seq = `replayFromSeq`, `replayBytes` long) BEFORE this result, followed
 * by any live frames that arrived meanwhile.
 */
export type WireAttachResult = Omit<PtySpawnResult, 'replay'> & {
  replayFromSeq?: number;
  replayBytes?: number;
};

/** A terminal as `ptyrelay/list` reports it: the provider's info plus the relay's claim holder. */
export type RelayTerminalInfo = PtyProcessInfo & { owner?: string };

/**
 * A host a listing (`ptyrelay/list`, `ptyrelay/daemons`, `web/overview`) could not include, and
 * why: `unreachable` (its link is down and retrying: `cause`, `nextAttemptAt`), `deploy-failed`
 * (`code`, `nextAttemptAt`), `untrusted` (its key is not in known_hosts: `fingerprint`, and `fix`
 * is the command that trusts it), `connecting` (no answer within the listing's deadline) or
 * `error` (`code`). `reason` says it in words. A listing with any of these is partial.
 */
export interface HostUnavailable {
  host: string;
  status: 'unreachable' | 'deploy-failed' | 'untrusted' | 'connecting' | 'error';
  reason: string;
  code?: string;
  cause?: LinkCause;
  /** Epoch ms of the next connect or deploy attempt, when one is scheduled. */
  nextAttemptAt?: number;
  fingerprint?: string;
  /** The command that fixes it, e.g. `ptyrelay hosts trust box`. */
  fix?: string;
}

/** `ptyrelay/list` result: the terminals of the hosts that answered, and the hosts that did not. */
export interface RelayListing {
  terminals: RelayTerminalInfo[];
  /** Hosts left out (empty when the listing is complete). */
  unavailable: HostUnavailable[];
}

/** `ptyrelay/inputAck` (relay → client): cumulative input acknowledgement. */
export interface InputAckParams {
  /** Every input frame with inputSeq <= upTo is done. */
  upTo: number;
  /** Frames in that range that failed, with their error. */
  failed?: { inputSeq: number; error: PtyRelayErrorShape }[];
}

/** `ptyrelay/ack` (client → relay): credit for a terminal's output. */
export interface AckParams {
  id: string;
  /** The client has consumed output up to this seq. */
  seq: number;
}

/** `ptyrelay/fact` (relay → client). */
export interface FactParams {
  id: string;
  incarnationId: string;
  seq: number;
  fact: PtyFact;
}

/** Result shapes of the simple methods. */
export interface RelayResults {
  getCwd: { cwd?: string };
  getForegroundProcess: { process?: ForegroundProcess };
  hasChildProcesses: { value: boolean };
  list: RelayListing;
  probe: { alive: boolean | null };
  snapshot: ScreenSnapshot;
  hosts: { hosts: HostInfo[] };
  daemons: { daemons: RelayDaemonInfo[]; unavailable?: HostUnavailable[] };
  stopDaemon: { stopped: RelayDaemonInfo };
}

/**
 * A per-user daemon on a host (`ptyrelay/daemons`): its build, pid, session count and the links
 * (relays) attached; `current` is false for an older build kept for its sessions. A host that
 * could not be reached is listed with `error` only.
 */
export type RelayDaemonInfo =
  | {
      host: string;
      build: string;
      pid: number;
      protocol: number;
      sessions: number;
      connections: number;
      startedAt: number;
      current: boolean;
    }
  | { host: string; error: string };
