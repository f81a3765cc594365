/**
 * The IPtyProvider contract: one shape for every PTY host (the local daemon, SSH hosts,
 * a relay reached over WebSocket). Semantics are explained in docs/contract.md.
 */

export type {
  AgentAwaiting,
  AgentCommand,
  AgentCommandsOptions,
  AgentCommandsResult,
  AgentEndReason,
  AgentReadOptions,
  AgentReadResult,
  AgentSendOptions,
  AgentSendResult,
  AgentTag,
} from './agent-contract.js';

import type {
  AgentCommandsOptions,
  AgentCommandsResult,
  AgentReadOptions,
  AgentReadResult,
  AgentSendOptions,
  AgentSendResult,
  AgentTag,
} from './agent-contract.js';

/** Where the sequence numbering of a stream stands after spawn/attach. */
export interface ProviderSequence {
  /** Seq of the next byte the live stream will deliver. */
  value: number;
  /**
   * `continued`: the caller's view is exact up to `value` (replay filled any gap).
   * `reset`: a snapshot replaced the caller's history; the caller must clear its view first.
   */
  generation: 'continued' | 'reset';
}

/** A serialized screen (VT sequences that repaint it) taken at a known seq. */
/** A page of a terminal's output history (IPtyProvider.readHistory). */
export interface PtyHistoryPage {
  /** Seq of `data[0]`. */
  fromSeq: number;
  data: Uint8Array;
  /** Oldest seq the host still holds. */
  startSeq: number;
  /** Seq of the next byte the terminal will write. */
  headSeq: number;
}

export interface ScreenSnapshot {
  /** VT data that reproduces screen, scrollback rows and cursor when written to a fresh emulator. */
  data: string;
  cols: number;
  rows: number;
  /** The snapshot reflects exactly the output bytes `[0, seq)`. */
  seq: number;
  /** True when a full-screen program had the alternate screen active. */
  alternateScreen: boolean;
}

/**
 * State recovered from disk for a session whose process is gone (cold restore: the host rebooted
 * or the daemon died). Comes with `sessionExpired: true`; see docs/reconnect.md.
 */
export interface ColdRestore {
  /** VT data that repaints the last screen with (bounded) scrollback above it; write it to a cleared emulator. */
  scrollback: string;
  /** Working directory of the shell when last saved: where a replacement shell should start. */
  cwd?: string;
  cols: number;
  rows: number;
  lastTitle?: string;
  /** Program the terminal ran. */
  command?: string;
  /** When the record was last written (ms since the epoch); the terminal died after this. */
  savedAt?: number;
  /** Exit status when the process had exited before the host went down. */
  exited?: PtyExitInfo;
}

export interface PtyExitInfo {
  /** Exit status; when killed by a signal this is 128 + signal number (shell convention). */
  exitCode: number;
  /** Name of the terminating signal, e.g. `SIGKILL`, when there was one. */
  signal?: string;
}

export interface PtySpawnOptions {
  /** Host name from the provider's configuration. Ignored by the local provider. */
  host?: string;
  cols: number;
  rows: number;
  /** Working directory; must exist. Defaults to the user's home directory. */
  cwd?: string;
  /** Variables added to (or overriding) the daemon's environment. */
  env?: Record<string, string>;
  /** Variables removed from the environment before spawning. */
  envToDelete?: string[];
  /** Program to run (argv[0]); never a shell string. Default: the user's login shell with integration. */
  command?: string;
  /** Arguments for `command`. */
  args?: string[];
  /** Display name; the initial title until the program sets one. */
  name?: string;
  /** Concurrent or repeated spawns with the same paneKey yield one live PTY (attached, not re-created). */
  paneKey?: string;
  /** Idempotency key: a retried spawn with the same requestId never makes a second PTY. */
  requestId?: string;
  /**
   * Client-chosen name (an AHP channel URI) kept with the session by its daemon, so it outlives
   * relay restarts. Unique per daemon: a spawn with an alias in use fails with ALREADY_EXISTS.
   */
  alias?: string;
  /**
   * The agent that owns this terminal (agent terminals, docs/agents.md), kept with the session by
   * its daemon so that a relay started later knows the owner and when it was last connected.
   */
  agent?: AgentTag;
  /**
   * Who owns this terminal (a relay's claim holder, `client:ID`), kept with the session by its
   * daemon so that every relay — a restarted one, or another of a fleet — knows whose it is.
   */
  owner?: string;
  /** Aborts a spawn that has not been answered yet. */
  signal?: AbortSignal;
}

export interface PtyAttachOptions {
  /** Last seq the caller has seen; replay starts here when the ring still holds it. */
  fromSeq?: number;
  /** Fence: fail with INCARNATION_MISMATCH unless the session still runs this incarnation. */
  expectedIncarnationId?: string;
}

/** Shared by spawn and attach results. */
export interface PtyAttachResult {
  /** Globally routable id, `<host>/<id>`. */
  id: string;
  pid: number;
  incarnationId: string;
  cols: number;
  rows: number;
  providerSequence: ProviderSequence;
  /** Exact bytes from the caller's `fromSeq` (or from `snapshot.seq`) up to `providerSequence.value`. Do not clear before writing. */
  replay?: Uint8Array;
  /** Screen at `snapshot.seq`; present when generation is `reset`. Write it to a cleared emulator, then `replay`. */
  snapshot?: ScreenSnapshot;
  /** The PTY this id named no longer exists and nothing can be replayed. */
  sessionExpired?: boolean;
  /** Set when the process has already exited; no further data will come. */
  exited?: PtyExitInfo;
  coldRestore?: ColdRestore;
  /** Title and cwd known when the result was built. */
  title?: string;
  cwd?: string;
  /** The session's client-chosen name (PtySpawnOptions.alias), if it has one. */
  alias?: string;
  /** Who owns it (PtySpawnOptions.owner), as its daemon keeps it. */
  owner?: string;
}

export interface PtySpawnResult extends PtyAttachResult {
  /** The process exited before the spawn reply was produced (exit info in `exited`). */
  exitedBeforeSpawnReply?: boolean;
  /** True when paneKey/requestId matched an existing PTY and this spawn attached to it. */
  reused?: boolean;
}

export interface PtyDataEvent {
  id: string;
  incarnationId: string;
  /** Byte offset of `data[0]` in the session's whole output stream. */
  seq: number;
  data: Uint8Array;
}

export interface PtyExitEvent extends PtyExitInfo {
  id: string;
  incarnationId: string;
}

/** Facts extracted from the output stream by the stub. */
export type PtyFact =
  | { type: 'title'; title: string }
  | { type: 'cwd'; cwd: string }
  | { type: 'bell' }
  | { type: 'commandDetectionAvailable' }
  | { type: 'commandStarted'; commandLine: string }
  | { type: 'commandFinished'; exitCode?: number; durationMs?: number; commandLine?: string };

export interface PtyFactEvent {
  id: string;
  incarnationId: string;
  /** Position in the output stream where the fact occurred. */
  seq: number;
  fact: PtyFact;
}

/** Events a backgrounded session delivers in stream order, instead of (most of) its data. */
export type PtyBackgroundStreamEvent =
  | {
      id: string;
      incarnationId: string;
      type: 'backgroundMarker';
      background: boolean;
      seq: number;
      /** On `background: false`: the screen at `seq`; clear the view, write it, then the onData bytes from `seq`. */
      snapshot?: ScreenSnapshot;
    }
  | {
      id: string;
      incarnationId: string;
      type: 'dataGap';
      droppedBytes: number;
      fromSeq: number;
      toSeq: number;
    }
  | {
      id: string;
      incarnationId: string;
      type: 'fact';
      seq: number;
      fact: PtyFact | { type: 'exit'; exitCode: number; signal?: string };
    };

export interface PtyProcessInfo {
  id: string;
  host: string;
  pid: number;
  incarnationId: string;
  title: string;
  cwd?: string;
  cols: number;
  rows: number;
  exited?: PtyExitInfo;
  name?: string;
  /** Client-chosen name (PtySpawnOptions.alias). */
  alias?: string;
  /** A terminal lost with its host, known from its cold-restore record (attach gives the record). */
  coldRestored?: boolean;
  /** The last command shell integration reported (where it runs): line, running or its exit. */
  lastCommand?: LastCommand;
  /** The owning agent of an agent terminal (PtySpawnOptions.agent). */
  agent?: AgentTag;
  /** Who owns it (PtySpawnOptions.owner), as its daemon keeps it. */
  owner?: string;
}

/** A terminal's last command, as its shell integration reported it. */
export interface LastCommand {
  commandLine: string;
  running: boolean;
  exitCode?: number;
  durationMs?: number;
}

export interface ForegroundProcess {
  pid: number;
  /** Short command name (`/proc/<pid>/comm`). */
  name: string;
  /** Full argv when readable. */
  argv?: string[];
}

export interface ShutdownOptions {
  /** SIGKILL at once instead of SIGHUP then SIGKILL after the deadline. */
  immediate?: boolean;
  /** Time allowed between SIGHUP and SIGKILL (default 2000 ms). */
  deadlineMs?: number;
}

export type Unsubscribe = () => void;

/**
 * Where one write came from, end to end: a client instance (`instance`, at most 255 UTF-8 bytes)
 * and that client's own input seq (`seq`, rising per instance). A provider whose daemons
 * de-duplicate by origin applies a write at most once per instance, terminal and seq, whichever
 * relay process forwarded it. `resent`: the client sent it before, maybe to another relay process;
 * a provider that cannot de-duplicate it refuses it (LINK_CLOSED, `maybeApplied`) instead of
 * risking a second application.
 */
export interface PtyInputOrigin {
  instance: string;
  seq: number;
  resent?: boolean;
}

/** Options of one `write`. */
export interface PtyWriteOptions {
  /**
   * Who typed it (e.g. a client instance). Input queued during an outage can be discarded per
   * owner when that owner detaches or goes away; providers that do not queue ignore it.
   */
  owner?: string;
  /** Where it came from (see PtyInputOrigin); providers that do not forward input ignore it. */
  origin?: PtyInputOrigin;
}

/** State of the link between a provider and one host's daemon. */
export type LinkState =
  | { state: 'idle' }
  | { state: 'connecting' }
  | { state: 'connected' }
  | { state: 'reconnecting'; attempt: number; nextInMs: number; lastError?: string; cause?: LinkCause }
  | { state: 'lost'; reason: string; cause?: LinkCause }
  /**
   * The stub deploy failed (`code`, `reason`: the PtyRelayError). Requests fail at once with that
   * error until `nextAttemptAt` (epoch ms); after it the next request (or, for a host with sessions
   * to restore, the relay itself) deploys again. At least 30 s, growing with `attempts`.
   */
  | {
      state: 'deploy-failed';
      code: string;
      reason: string;
      retryable: boolean;
      attempts: number;
      nextAttemptAt: number;
    };

/**
 * What an outage is down to, for people: `network` (timeouts, unreachable, name resolution),
 * `sshd` (refused, closed or reset by the host: sshd or the machine is down), `auth`, `hostkey`,
 * `daemon` (the stub daemon or its install), `relay` (the client's link to the relay), `link`
 * (anything else).
 */
export type LinkCause = 'network' | 'sshd' | 'auth' | 'hostkey' | 'daemon' | 'relay' | 'link';

export interface LinkStateEvent {
  host: string;
  state: LinkState;
}

/**
 * A session the provider re-attached on its own after a reconnect. Exact replays arrive as
 * ordinary `onData` events; this event says when the view was reset (snapshot) or the PTY is gone.
 */
export interface PtyReattachEvent {
  id: string;
  incarnationId: string;
  generation: 'continued' | 'reset';
  /** Present on `reset`: clear the view, write it, then the replay bytes that follow as onData. */
  snapshot?: ScreenSnapshot;
  /** The PTY no longer exists (daemon restarted, or it exited and was forgotten). */
  sessionExpired?: boolean;
  /** With sessionExpired: the saved last screen, cwd and title when the host kept a record. */
  coldRestore?: ColdRestore;
}

export interface IPtyProvider {
  /** Start a new PTY (or attach to the one named by paneKey/requestId). Resolves only after the spawn succeeded. */
  spawn(opts: PtySpawnOptions): Promise<PtySpawnResult>;
  /** Subscribe to an existing PTY: exact replay from `fromSeq` or a snapshot with a seq reset. */
  attach(id: string, opts?: PtyAttachOptions): Promise<PtyAttachResult>;
  /** Queue input for the PTY; resolves when the stub has accepted it. */
  write(id: string, data: string | Uint8Array, opts?: PtyWriteOptions): Promise<void>;
  resize(id: string, cols: number, rows: number): Promise<void>;
  /** End the PTY's process group: SIGHUP, SIGKILL after the deadline (or at once with `immediate`). */
  shutdown(id: string, opts?: ShutdownOptions): Promise<void>;
  /** Deliver a signal (e.g. `SIGINT`) to the PTY's foreground process group. */
  sendSignal(id: string, signal: string): Promise<void>;
  /** Current working directory of the foreground process (Linux: /proc). */
  getCwd(id: string): Promise<string | undefined>;
  getForegroundProcess(id: string): Promise<ForegroundProcess | undefined>;
  /** True when the shell has children (a command is running). */
  hasChildProcesses(id: string): Promise<boolean>;
  listProcesses(): Promise<PtyProcessInfo[]>;
  /** `false` only when the provider positively answered that the PTY is absent; `undefined` when it cannot tell. */
  probePtyLiveness(id: string): Promise<boolean | undefined>;
  getBufferSnapshot(id: string, opts?: { scrollbackRows?: number }): Promise<ScreenSnapshot>;
  /**
   * A page of the terminal's raw output history from `fromSeq` (RAM tail and the host's log on
   * disk, docs/reconnect.md): at most `maxBytes` (default 1 MiB, at most 4 MiB). A `fromSeq` the
   * history no longer holds starts the page at the oldest seq held (`fromSeq` in the page says so).
   */
  readHistory?(id: string, opts?: { fromSeq?: number; maxBytes?: number }): Promise<PtyHistoryPage>;
  /** Drop the model's scrollback (the screen stays). */
  clearBuffer(id: string): Promise<void>;
  /** Stop reading the PTY (the writing program blocks in the kernel). */
  pauseProducer(id: string): Promise<void>;
  resumeProducer(id: string): Promise<void>;
  /** Background sessions send only a keep-tail of their output plus ordered background stream events. */
  setPtyBackgrounded(id: string, background: boolean): Promise<void>;
  /** Credit flow control: the consumer has processed `bytes` more bytes of this session's data. */
  acknowledgeDataEvent(id: string, bytes: number): void;
  /**
   * Credit flow control by position: the consumer has processed everything of incarnation
   * `incarnationId` before `seq`. Idempotent and monotonic (a lower seq, or another incarnation,
   * changes nothing), so it stays right across re-attaches, catch-ups and resets, where a count of
   * bytes would drift from the provider's own position.
   */
  acknowledgeDataTo?(id: string, incarnationId: string, seq: number): void;
  onData(listener: (e: PtyDataEvent) => void): Unsubscribe;
  onExit(listener: (e: PtyExitEvent) => void): Unsubscribe;
  onFact(listener: (e: PtyFactEvent) => void): Unsubscribe;
  onBackgroundStreamEvent(listener: (e: PtyBackgroundStreamEvent) => void): Unsubscribe;
  /** Link state changes per host (providers with a network link). */
  onLinkState?(listener: (e: LinkStateEvent) => void): Unsubscribe;
  /** Sessions re-attached after a reconnect that were reset or have expired. */
  onReattach?(listener: (e: PtyReattachEvent) => void): Unsubscribe;
  /**
   * Agent send: writes `data` (nothing when empty) and waits for the first end reason, decided
   * by the stub (see docs/agents.md). One at a time per terminal (`SEND_IN_PROGRESS`).
   */
  agentSend?(id: string, data: string, opts: AgentSendOptions): Promise<AgentSendResult>;
  /** A page of the terminal's retained text as plain lines. Never waits behind a send. */
  agentRead?(id: string, opts?: AgentReadOptions): Promise<AgentReadResult>;
  /** The commands the terminal's shell ran (shell integration), newest first. */
  commands?(id: string, opts?: AgentCommandsOptions): Promise<AgentCommandsResult>;
  /**
   * The owners of these agent terminals were connected at `seenAt` (PtySpawnOptions.agent):
   * their daemons keep it, so the owner-gone grace counts from there across relay restarts.
   */
  agentSeen?(ids: string[], seenAt: number): Promise<void>;
  /**
   * Records `owner` as the terminal's owner on its daemon (PtySpawnOptions.owner); with
   * `ifUnowned` only when it has none, so the first of several relays adopting it wins. Resolves
   * the owner the daemon holds now.
   */
  claimOwner?(id: string, owner: string, opts?: { ifUnowned?: boolean }): Promise<string>;
  /**
   * Discards input that `owner` wrote and that still waits for an outage to end (for terminal
   * `id`, or all): it detached or went away. Those writes fail with INPUT_EXPIRED. Returns bytes.
   */
  dropQueuedInput?(owner: string, id: string | undefined, reason: 'detached' | 'gone'): number;
  /** Release connections and listeners. PTYs keep running in their daemon. */
  dispose(): Promise<void>;
}
