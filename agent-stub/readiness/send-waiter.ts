import type { AgentAwaiting, AgentEndReason, AgentSendResult, PtyExitInfo } from '../../provider/contract.js';
import type { ReadinessConfig } from '../../provider/readiness-config.js';
import { readProcStat } from '../session/proc-info.js';
import type { SessionWatcher } from '../session/pty-session.js';
import { awaitingOf, needsModes } from './awaiting.js';
import { atShellPrompt, endReason, type SendObservation } from './end-rules.js';
import { type SendHistory, sendOutputFromHistory } from './send-output.js';
import { readTtyModes } from './termios-reader.js';
import { newWaits, probeSupported, probeTty } from './tty-wait-probe.js';

/** What a send needs of a PtySession. */
export interface ReadinessSession {
  readonly pid: number;
  readonly ttyPath: string | undefined;
  readonly alive: boolean;
  readonly exited?: PtyExitInfo;
  /** The session's output: the RAM tail and, while it is healthy, the log (a send's output may outgrow the tail). */
  readonly history: SendHistory;
  readonly atPrompt: boolean;
  /** Exit code of the last command that finished, until the next one starts. */
  readonly lastExitCode: number | undefined;
  /** The commands shell integration reported (their ids go into the result). */
  readonly commands?: { startedSince(seq: number): string[] };
  write(data: Uint8Array): void;
  watch(w: SessionWatcher): () => void;
}

export interface SendRequest {
  data: string;
  timeoutMs: number;
  idleMs?: number;
}

/**
 * One agent send: takes note of any wait for tty input that exists before the write (it must not
 * count), writes, then polls the end rules (end-rules.ts) until one gives a reason. A send of
 * empty text writes nothing and takes the shell's current prompt state as is (the "wait").
 */
export function runSend(
  s: ReadinessSession,
  req: SendRequest,
  cfg: ReadinessConfig,
): Promise<AgentSendResult> {
  if (!s.alive) {
    return Promise.resolve({
      reason: 'session_exit',
      output: '',
      truncated: false,
      ...(s.exited ? { exitCode: s.exited.exitCode } : {}),
      elapsedMs: 0,
    });
  }
  return new SendWait(s, req, cfg).run();
}

/** What the tty probe (or, without it, /proc's stat) says about the foreground at one poll. */
interface ForegroundState {
  topIsForeground: boolean | undefined;
  topWaitsForInput: boolean | undefined;
  /** A new wait for tty input held over two polls with no output between. */
  confirmed: boolean;
  /** Names of the foreground group's processes (the probe's); undefined without it. */
  names: string[] | undefined;
}

/** One send in flight (see runSend): the facts it watches, its poll timer and its deadline. */
class SendWait {
  private readonly startedAt = Date.now();
  private readonly typed: boolean;
  private readonly tty: string | undefined;
  /** Waits for tty input that existed before the write: pid → its voluntary context switches then. */
  private readonly before = new Map<number, number>();
  private readonly startSeq: number;
  /** The log line the send's first byte belongs to (undefined without a log). */
  private readonly startLine: number | undefined;
  private readonly idleMs: number;
  private promptSeen: boolean;
  private exitCode: number | undefined;
  private lastOutputAt: number;
  /** When the probe first saw a new wait for input (it counts once a later poll still sees it). */
  private hitAt: number | undefined;
  /** The foreground group's process names at the last poll (what `awaiting` is decided from). */
  private foregroundNames: string[] | undefined;
  private finished = false;
  private interval: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private off: () => void = () => {};
  private resolve: (r: AgentSendResult) => void = () => {};
  private reject: (err: unknown) => void = () => {};

  constructor(
    private readonly s: ReadinessSession,
    private readonly req: SendRequest,
    private readonly cfg: ReadinessConfig,
  ) {
    this.typed = req.data.length > 0;
    this.tty = probeSupported() ? s.ttyPath : undefined;
    if (this.typed && this.tty) {
      for (const w of probeTty(s.pid, this.tty)?.waits ?? []) this.before.set(w.pid, w.switches);
    }
    this.startSeq = s.history.head;
    this.startLine = s.history.linePosition?.()?.line;
    this.idleMs = req.idleMs ?? cfg.inferredIdleMs;
    this.promptSeen = this.typed ? false : s.atPrompt;
    // Not `atPrompt` alone: bash writes a command's end and its next prompt in two writes, and a
    // wait that starts between them must still report the code when the prompt comes.
    this.exitCode = this.typed ? undefined : s.lastExitCode;
    this.lastOutputAt = this.startedAt;
  }

  run(): Promise<AgentSendResult> {
    return new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.off = this.s.watch({
        output: () => {
          this.lastOutputAt = Date.now();
        },
        fact: (f) => {
          if (f.type === 'promptStart' || f.type === 'promptEnd') this.promptSeen = true;
          else if (f.type === 'commandStarted') {
            this.promptSeen = false;
            this.exitCode = undefined;
          } else if (f.type === 'commandFinished') this.exitCode = f.exitCode;
        },
        exit: () => this.finish('session_exit'),
      });
      this.interval = setInterval(() => this.poll(), this.cfg.pollIntervalMs);
      this.deadline = setTimeout(() => this.poll(), this.req.timeoutMs);
      if (this.typed) {
        try {
          this.s.write(Buffer.from(this.req.data, 'utf8'));
        } catch (err) {
          this.stop();
          reject(err);
        }
      }
    });
  }

  private poll(outputCaughtUp = false): void {
    if (this.finished) return;
    const now = Date.now();
    const { topIsForeground, topWaitsForInput, confirmed, names } = this.foreground(now);
    this.foregroundNames = names;
    const observed: SendObservation = {
      now,
      deadline: this.startedAt + this.req.timeoutMs,
      idleMs: this.idleMs,
      promptGraceMs: this.cfg.promptGraceMs,
      exited: !this.s.alive,
      promptSeen: this.promptSeen,
      lastOutputAt: this.lastOutputAt,
      topIsForeground,
      topWaitsForInput,
      ttyWaitConfirmed: confirmed,
    };
    const reason = endReason(observed);
    if (!reason) return;
    // /proc shows the present, but output the shell wrote before it sat down to wait can still
    // be in the kernel: timers run before I/O in an event-loop turn, and a starved daemon is a
    // turn behind. Decide again after this turn's reads (which may bring facts that undo it).
    if (outputCaughtUp) this.finish(reason, atShellPrompt(observed));
    else setImmediate(() => this.poll(true));
  }

  private foreground(now: number): ForegroundState {
    const { s, tty } = this;
    if (tty) {
      // The first poll runs one interval after the write: the probe never sees the moment before it.
      const p = probeTty(s.pid, tty);
      const fresh = p && !p.busy ? newWaits(p.waits, this.before) : [];
      let confirmed = false;
      if (fresh.length === 0) this.hitAt = undefined;
      else if (this.hitAt !== undefined && this.lastOutputAt <= this.hitAt) confirmed = true;
      else this.hitAt = now;
      return {
        topIsForeground: p?.topIsForeground,
        topWaitsForInput: p?.topWaits,
        confirmed,
        names: p?.names,
      };
    }
    if (process.platform === 'linux') {
      const st = readProcStat(s.pid);
      return {
        topIsForeground: st ? st.tpgid === st.pgrp : undefined,
        topWaitsForInput: undefined,
        confirmed: false,
        names: undefined,
      };
    }
    return { topIsForeground: undefined, topWaitsForInput: undefined, confirmed: false, names: undefined };
  }

  /** Ends the send; `atPrompt`: the shell was at its prompt when the reason was found (atShellPrompt). */
  private finish(reason: AgentEndReason, atPrompt = false): void {
    if (this.finished) return;
    this.stop();
    const code =
      reason === 'session_exit'
        ? this.s.exited?.exitCode
        : reason === 'stdin_read'
          ? this.exitCode
          : undefined;
    const elapsedMs = Date.now() - this.startedAt;
    const commandIds = this.s.commands?.startedSince(this.startSeq) ?? [];
    Promise.all([
      sendOutputFromHistory(this.s.history, this.startSeq, this.startLine, this.cfg.maxReadBytes),
      reason === 'stdin_read' ? this.awaiting(atPrompt) : undefined,
    ]).then(
      ([{ output, truncated, ...omitted }, awaiting]) =>
        this.resolve({
          reason,
          output,
          truncated,
          ...(code !== undefined ? { exitCode: code } : {}),
          elapsedMs,
          ...(awaiting ? { awaiting } : {}),
          ...omitted,
          ...(commandIds.length > 0 ? { commandIds } : {}),
        }),
      this.reject,
    );
  }

  /** What the input wait waits for (awaiting.ts); the tty's flags are read only when they decide. */
  private async awaiting(atPrompt: boolean): Promise<AgentAwaiting> {
    const facts = { atPrompt, foreground: this.foregroundNames };
    const tty = this.s.ttyPath;
    const modes = tty && needsModes(facts) ? await readTtyModes(tty) : undefined;
    return awaitingOf({ ...facts, modes });
  }

  private stop(): void {
    this.finished = true;
    this.off();
    clearInterval(this.interval);
    clearTimeout(this.deadline);
  }
}
