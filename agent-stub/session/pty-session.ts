/**
 * One PTY session in the daemon and its output path: every chunk the PTY produces goes through
 * the fact scanner (facts, OSC 633 stripped; a partial escape sequence is held at most
 * SCANNER_FLUSH_MS), into the numbered history (RAM tail and the log on disk), the credit window,
 * the screen model and every attached sink and readiness watcher, in that order. The process
 * itself (spawn, signals, shutdown, the last output at exit) is pty-process.ts; the screen model
 * and its scrollback are session-model.ts.
 */
import { randomUUID } from 'node:crypto';
import type * as pty from 'node-pty';
import type {
  AgentReadResult,
  AgentTag,
  LastCommand,
  PtyExitInfo,
  PtyFact,
  ScreenSnapshot,
  ShutdownOptions,
} from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { DEFAULT_PALETTE, type TerminalPalette } from '../../provider/terminal-queries.js';
import { ptyInternals } from '../adapters/node-pty.js';
import { CreditWindow, DEFAULT_CREDIT_WINDOW_MAX } from '../flow/credit-window.js';
import { ProducerGate } from '../flow/producer-gate.js';
import { CommandRecords, type OutputPoint, pointsIn } from '../history/command-records.js';
import { allInBackground, OutputHistory } from '../history/output-history.js';
import type { OutputRing } from '../history/output-ring.js';
import type { SessionLog } from '../history/session-log.js';
import { FactScanner, type ScannerFact, type ScanResult } from './fact-scanner.js';
import { droppedExternal } from './idle-gc.js';
import type { ModelScrollback } from './model-scrollback.js';
import { PtyInputWriter } from './pty-input-writer.js';
import {
  exitInfo,
  keepOutputOnExit,
  shutdownProcess,
  signalForeground,
  signalNumber,
  spawnPty,
} from './pty-process.js';
import type { ScreenModelHost } from './screen-model.js';
import type { SessionLaunch } from './session-launch.js';
import { SessionModel } from './session-model.js';
import { signalTaken } from './signal-delivery.js';

/** A partial escape sequence held by the scanner is released after this long without more output. */
const SCANNER_FLUSH_MS = 25;

/** Receives a session's stream, in order. Connections implement this. */
export interface SessionSink {
  data(session: PtySession, seq: number, data: Uint8Array): void;
  fact(session: PtySession, seq: number, fact: PtyFact): void;
  exit(session: PtySession, info: PtyExitInfo, seq: number): void;
  /** The link gets only a thinned tail of this session (keep-tail background mode). */
  isBackground(session: PtySession): boolean;
  /** The session is gone from the daemon (shut down, or its exit retention ended): let go of it. */
  removed(session: PtySession): void;
}

/** Observes a session's stream for agent readiness (every fact, prompt markers included). */
export interface SessionWatcher {
  output(): void;
  fact(fact: ScannerFact): void;
  exit(info: PtyExitInfo): void;
}

export type { SessionLaunch };

export interface SessionLimits {
  ringBytes: number;
  /** Ring while every attached link has the session in the background (default: ringBytes). */
  backgroundRingBytes?: number;
  scrollbackRows: number;
  /** Credit window of a slow or idle consumer link (bytes). */
  creditWindow?: number;
  /** Largest credit window of a fast link (bytes; never more than half the ring). */
  creditWindowMax?: number;
  /**
   * How long a dropped link keeps its claim (ms): it holds the producer at its window while the
   * session has no log, and with a log only once it is `logKeepsBytes` behind.
   */
  creditGraceMs?: number;
  /** RAM tail while the session's output log is healthy (default: ringBytes). */
  tailBytes?: number;
  /** What the output log keeps at most (bounds unacknowledged output while it is healthy). */
  logBytes?: number;
  /** What the log is sure to keep: its cap less two segments (it drops whole segments to roll). */
  logKeepsBytes?: number;
  /** Idle time after which the model drops its scrollback (ms; 0: never, not even in the background). */
  scrollbackIdleMs?: number;
  /** The colours terminal colour queries (OSC 10/11/12) are answered with (default: DEFAULT_PALETTE). */
  palette?: TerminalPalette;
}

export { ringLimitFor } from '../history/output-history.js';
export { signalNumber } from './pty-process.js';

/**
 * One PTY and its output pipeline: scanner (facts, strip OSC 633) → history (seq: RAM tail and
 * the log on disk) → model worker → attached sinks. The PTY reader never waits on the model or
 * the disk.
 */
export class PtySession {
  readonly incarnationId = randomUUID();
  readonly pid: number;
  readonly name?: string;
  /** Client-chosen name (an AHP channel URI); the registry keeps it unique. */
  alias?: string;
  /** The owning agent of an agent terminal, and when it was last seen connected. */
  agent?: AgentTag;
  /** Who owns a client terminal (`client:ID`): set at spawn, or by the first relay that adopts it. */
  owner?: string;
  /** Program and arguments the PTY runs (what a cold restore reports). */
  readonly command: string;
  readonly args: readonly string[];
  readonly createdAt = Date.now();
  cols: number;
  rows: number;
  title: string;
  cwd?: string;
  exited?: PtyExitInfo;
  exitedAt?: number;
  readonly history: OutputHistory;
  readonly gate: ProducerGate;
  readonly credits: CreditWindow;
  private readonly proc: pty.IPty;
  private readonly input: PtyInputWriter;
  private readonly scanner: FactScanner;
  private readonly sinks = new Set<SessionSink>();
  private readonly watchers = new Set<SessionWatcher>();
  /** The PTY's slave device (`/dev/pts/N`), for the readiness probe. */
  readonly ttyPath: string | undefined;
  /** Shell integration's last word was a prompt (no command started since). */
  atPrompt = false;
  /** Exit code of the last command shell integration reported finished, until the next one starts. */
  lastExitCode: number | undefined;
  /** The last command shell integration reported: its line, and running or how it ended. */
  lastCommand: LastCommand | undefined;
  /** Every command shell integration reported, with where its output lies (agent reads by command). */
  readonly commands = new CommandRecords();
  private readonly exitWaiters: Array<() => void> = [];
  private readonly exitListeners: Array<() => void> = [];
  private flushTimer: NodeJS.Timeout | undefined;
  /** The screen model in the worker (session-model.ts). */
  private readonly model: SessionModel;
  /** Whether the model keeps its scrollback now (background and idle sessions drop it). */
  readonly scrollback: ModelScrollback;
  /** The ring holds only the idle tail (refreshRingLimit); the next output or input widens it. */
  private ringIdle = false;
  private commandDetection = false;

  constructor(
    readonly id: string,
    launch: SessionLaunch,
    limits: SessionLimits,
    model: ScreenModelHost,
    log?: SessionLog,
  ) {
    this.cols = launch.cols;
    this.rows = launch.rows;
    this.name = launch.name;
    this.command = launch.file;
    this.args = [...launch.args];
    this.title = launch.name ?? launch.file;
    this.cwd = launch.cwd;
    this.history = new OutputHistory(
      {
        ringBytes: limits.ringBytes,
        backgroundRingBytes: limits.backgroundRingBytes ?? limits.ringBytes,
        tailBytes: limits.tailBytes ?? limits.ringBytes,
        logBytes: limits.logBytes ?? limits.ringBytes,
      },
      log,
    );
    this.scanner = new FactScanner({ nonce: launch.nonce });
    this.proc = spawnPty(launch);
    this.pid = this.proc.pid;
    const internals = ptyInternals(this.proc);
    this.ttyPath = internals?.ptsName;
    this.input = new PtyInputWriter(this.proc, internals);
    this.gate = new ProducerGate(
      () => this.proc.pause(),
      () => this.proc.resume(),
    );
    const windowMax = limits.creditWindowMax ?? DEFAULT_CREDIT_WINDOW_MAX;
    this.credits = new CreditWindow(this.gate, {
      minBytes: limits.creditWindow,
      // Unacknowledged output must stay replayable: in the log, or in the ring whatever its limit.
      maxBytes: () => Math.min(windowMax, this.history.replayCapacity / 2),
      graceMs: limits.creditGraceMs,
      // With a log, a departed link's output goes to disk: it no longer pauses the program.
      lostLinksHold: () => !this.history.logging,
      // …until it fell as far behind as the log is sure to keep: a short outage in a flood still
      // replays exactly, the program waiting for the link (or its grace) from there.
      lostLinkBytes: () => limits.logKeepsBytes ?? Number.POSITIVE_INFINITY,
    });
    this.model = new SessionModel(model, {
      sid: this.incarnationId,
      cols: launch.cols,
      rows: launch.rows,
      scrollbackRows: limits.scrollbackRows,
      scrollbackIdleMs: limits.scrollbackIdleMs,
      history: this.history,
      gate: this.gate,
      currentRows: () => this.rows,
      palette: limits.palette ?? DEFAULT_PALETTE,
      // The terminal answers queries in its output itself, once, whoever watches (or nobody).
      reply: (data) => {
        if (this.alive) this.input.write(Buffer.from(data));
      },
    });
    this.scrollback = this.model.scrollback;
    keepOutputOnExit(internals, this.gate, (chunk) => this.onOutput(chunk));
    // `encoding: null` makes node-pty emit Buffers; its typings still say string.
    this.proc.onData((d) => this.onOutput(d as unknown as Buffer));
    this.proc.onExit((e) => this.onProcessExit(e.exitCode, e.signal));
  }

  /** The RAM ring (the tail while the log is healthy). */
  get ring(): OutputRing {
    return this.history.ring;
  }

  get alive(): boolean {
    return this.exited === undefined;
  }

  /** Calls `cb` once the process has exited (after the last output and the sinks' exit). */
  onExited(cb: () => void): void {
    if (this.exited) queueMicrotask(cb);
    else this.exitListeners.push(cb);
  }

  get supportsCommandDetection(): boolean {
    return this.commandDetection;
  }

  addSink(s: SessionSink): void {
    this.sinks.add(s);
  }

  removeSink(s: SessionSink): void {
    this.sinks.delete(s);
  }

  /** Adds a readiness watcher; returns its removal. */
  watch(w: SessionWatcher): () => void {
    this.watchers.add(w);
    return () => this.watchers.delete(w);
  }

  get sinkCount(): number {
    return this.sinks.size;
  }

  /**
   * Re-derives the ring's limit after an attach, detach, background switch or credit sweep (see
   * {@link OutputHistory.ringLimit}).
   */
  refreshRingLimit(now = Date.now()): void {
    const background = this.linksInBackground();
    this.ringIdle = this.scrollback.idle(now, allInBackground(background));
    const before = this.ring.allocated;
    this.ring.setLimit(this.history.ringLimit(background, this.credits.claims, this.ringIdle));
    // Idle sessions allocate nothing: without a collection the old buffer would stay resident.
    if (this.ring.allocated < before) droppedExternal(before - this.ring.allocated);
  }

  /** Whether each attached link has the session in the background. */
  private linksInBackground(): boolean[] {
    return [...this.sinks].map((s) => s.isBackground(this));
  }

  /** Full ring from now on (a link is bringing the session back; refreshRingLimit settles it after). */
  widenRing(): void {
    this.ring.setLimit(this.history.widestRing);
  }

  write(data: Uint8Array): void {
    if (!this.alive) throw new PtyRelayError('SESSION_EXITED', `${this.id} has exited`);
    if (data.length > 0) this.input.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    this.scrollback.used();
    if (this.ringIdle) this.refreshRingLimit();
  }

  resize(cols: number, rows: number): void {
    if (
      !Number.isInteger(cols) ||
      !Number.isInteger(rows) ||
      cols < 1 ||
      rows < 1 ||
      cols > 4096 ||
      rows > 4096
    ) {
      throw new PtyRelayError('INVALID_ARGUMENT', `invalid size ${cols}x${rows}`);
    }
    if (!this.alive) return;
    this.cols = cols;
    this.rows = rows;
    this.proc.resize(cols, rows);
    this.model.resize(this.ring.head, cols, rows);
  }

  /**
   * Signal the foreground process group (what Ctrl-C would reach), not just the shell. Resolves
   * once the signal was taken (signal-delivery.ts): input written after it cannot reach a program
   * that the signal was about to stop.
   */
  async signal(name: string): Promise<void> {
    const num = signalNumber(name);
    if (!this.alive) throw new PtyRelayError('SESSION_EXITED', `${this.id} has exited`);
    await signalTaken(signalForeground(this.pid, num), num);
  }

  /** The model's screen and scrollback; a model that dropped its scrollback rebuilds it from the log first. */
  snapshot(scrollbackRows?: number): Promise<ScreenSnapshot> {
    return this.model.snapshot(scrollbackRows);
  }

  /** A page of the model's text (agent reads); everything output so far is parsed first. */
  text(offset: number, count: number, maxBytes: number): Promise<AgentReadResult> {
    return this.model.text(offset, count, maxBytes);
  }

  /**
   * Lets the model drop its scrollback when the session is idle or every attached link has it in
   * the background (called periodically); true when it just did.
   */
  sweepModel(now: number): boolean {
    const background = allInBackground(this.linksInBackground());
    return this.scrollback.sweep(now, background);
  }

  /**
   * The model's screen as far as it has parsed, without first feeding it output it holds back
   * (a flood the feeder may partly skip): cheaper, and up to a few seconds behind the ring. A model
   * that dropped its scrollback (a streaming background session) answers with what it holds.
   */
  snapshotAsParsed(scrollbackRows?: number): Promise<ScreenSnapshot> {
    return this.model.snapshotAsParsed(scrollbackRows);
  }

  clearModel(): void {
    this.model.clear(this.ring.head);
  }

  /** SIGHUP the process groups, SIGKILL whatever is left after the deadline; resolves after exit. */
  async shutdown(opts: ShutdownOptions = {}): Promise<void> {
    if (!this.alive) return;
    await shutdownProcess(this.pid, new Promise<void>((r) => this.exitWaiters.push(r)), opts);
  }

  /** Release the model; called when the registry forgets the session. */
  dispose(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.model.dispose();
    for (const sink of [...this.sinks]) sink.removed(this);
    this.sinks.clear();
    // Its RAM tail is garbage now; with no session left nothing else would make V8 collect it.
    droppedExternal(this.ring.allocated);
  }

  private onOutput(chunk: Buffer): void {
    this.deliver(this.scanner.push(chunk));
    if (this.scanner.hasPending()) {
      if (!this.flushTimer) {
        this.flushTimer = setTimeout(() => {
          this.flushTimer = undefined;
          this.deliver(this.scanner.flush());
        }, SCANNER_FLUSH_MS);
      }
    } else if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
    }
  }

  /** Where the output stands now (a running command's end so far). */
  outputPoint(): OutputPoint {
    return pointsIn(new Uint8Array(0), this.history.head, this.history.linePosition())(0);
  }

  private deliver(res: ScanResult): void {
    const base = this.ring.head;
    const { data } = res;
    // Command records need the line position before `data` goes into the log (its index may take it at once).
    const at = res.facts.some((f) => f.fact.type === 'commandStarted' || f.fact.type === 'commandFinished')
      ? pointsIn(data, base, this.history.linePosition())
      : undefined;
    if (data.length > 0) {
      this.scrollback.used();
      if (this.ringIdle) this.refreshRingLimit();
      this.history.append(data);
      this.credits.advance(this.ring.head);
      this.model.push(base, data);
      for (const s of this.sinks) s.data(this, base, data);
      for (const w of this.watchers) w.output();
    }
    for (const f of res.facts) {
      const fact = f.fact;
      if (fact.type === 'promptStart' || fact.type === 'promptEnd') this.atPrompt = true;
      else if (fact.type === 'commandStarted') {
        this.atPrompt = false;
        this.lastExitCode = undefined;
        this.lastCommand = { commandLine: fact.commandLine, running: true };
        if (at) this.commands.started(at(f.offset), fact.commandLine, this.cwd, Date.now());
      } else if (fact.type === 'commandFinished') {
        if (at) this.commands.finished(at(f.offset), fact);
        this.lastExitCode = fact.exitCode;
        this.lastCommand = {
          commandLine: fact.commandLine ?? this.lastCommand?.commandLine ?? '',
          running: false,
          ...(fact.exitCode !== undefined ? { exitCode: fact.exitCode } : {}),
          ...(fact.durationMs !== undefined ? { durationMs: fact.durationMs } : {}),
        };
      }
      for (const w of this.watchers) w.fact(fact);
      if (fact.type === 'promptStart' || fact.type === 'promptEnd') continue;
      if (fact.type === 'title') this.title = fact.title;
      else if (fact.type === 'cwd') this.cwd = fact.cwd;
      else if (fact.type === 'commandDetectionAvailable') this.commandDetection = true;
      for (const s of this.sinks) s.fact(this, base + f.offset, fact as PtyFact);
    }
  }

  private onProcessExit(exitCode: number, signal?: number): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.deliver(this.scanner.flush());
    this.commands.ended(this.outputPoint());
    this.exited = exitInfo(exitCode, signal);
    this.exitedAt = Date.now();
    this.gate.releaseAll();
    for (const s of this.sinks) s.exit(this, this.exited, this.ring.head);
    for (const w of [...this.watchers]) w.exit(this.exited);
    for (const w of this.exitWaiters.splice(0)) w();
    for (const l of this.exitListeners.splice(0)) l();
  }
}
