import type { AgentEndReason, AgentSendResult, PtyExitInfo } from '../../provider/contract.js';
import type { ReadinessConfig } from '../../provider/readiness-config.js';
import type { OutputRing } from '../history/output-ring.js';
import { utf8Tail, vtToPlainText } from '../history/plain-text.js';
import { readProcStat } from '../session/proc-info.js';
import type { SessionWatcher } from '../session/pty-session.js';
import { endReason } from './end-rules.js';
import { newWaits, probeSupported, probeTty } from './tty-wait-probe.js';

/** Raw output rendered for a send's result, as a multiple of the byte bound (escapes take room). */
const RAW_WINDOW_FACTOR = 4;
const NEWLINE = 0x0a;

/** What a send reads its output from (OutputHistory). */
export interface SendHistory {
  readonly start: number;
  readonly head: number;
  read(from: number, to?: number): Promise<Buffer | undefined>;
}

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
  write(data: Uint8Array): void;
  watch(w: SessionWatcher): () => void;
}

export interface SendRequest {
  data: string;
  timeoutMs: number;
  idleMs?: number;
}

/**
 * The output `[fromSeq, head)` as plain text, its newest `maxBytes` bytes. The raw bytes rendered
 * are bounded too; a window that starts inside the output begins after a newline so that it does
 * not start inside an escape sequence.
 */
export function sendOutput(
  ring: OutputRing,
  fromSeq: number,
  maxBytes: number,
): { output: string; truncated: boolean } {
  const from = Math.max(fromSeq, ring.start, ring.head - RAW_WINDOW_FACTOR * maxBytes);
  return renderSendOutput(ring.slice(from) ?? Buffer.alloc(0), from > fromSeq, maxBytes);
}

/** {@link sendOutput} from the session's history (the log reaches further back than the RAM tail). */
export async function sendOutputFromHistory(
  history: SendHistory,
  fromSeq: number,
  maxBytes: number,
): Promise<{ output: string; truncated: boolean }> {
  const from = Math.max(fromSeq, history.start, history.head - RAW_WINDOW_FACTOR * maxBytes);
  return renderSendOutput((await history.read(from)) ?? Buffer.alloc(0), from > fromSeq, maxBytes);
}

function renderSendOutput(
  raw: Buffer,
  cutStart: boolean,
  maxBytes: number,
): { output: string; truncated: boolean } {
  let text = raw;
  if (cutStart) {
    const nl = text.indexOf(NEWLINE);
    text = nl >= 0 ? text.subarray(nl + 1) : text;
  }
  const tail = utf8Tail(vtToPlainText(text), maxBytes);
  return { output: tail.text, truncated: cutStart || tail.truncated };
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
  const startedAt = Date.now();
  const typed = req.data.length > 0;
  if (!s.alive) {
    return Promise.resolve({
      reason: 'session_exit',
      output: '',
      truncated: false,
      ...(s.exited ? { exitCode: s.exited.exitCode } : {}),
      elapsedMs: 0,
    });
  }
  const tty = probeSupported() ? s.ttyPath : undefined;
  const before = new Map<number, number>();
  if (typed && tty) for (const w of probeTty(s.pid, tty)?.waits ?? []) before.set(w.pid, w.switches);
  const startSeq = s.history.head;
  const idleMs = req.idleMs ?? cfg.inferredIdleMs;
  let promptSeen = typed ? false : s.atPrompt;
  // Not `atPrompt` alone: bash writes a command's end and its next prompt in two writes, and a
  // wait that starts between them must still report the code when the prompt comes.
  let exitCode = typed ? undefined : s.lastExitCode;
  let lastOutputAt = startedAt;
  let hitAt: number | undefined;

  return new Promise((resolve, reject) => {
    let finished = false;
    let interval: NodeJS.Timeout | undefined;
    let deadline: NodeJS.Timeout | undefined;
    const finish = (reason: AgentEndReason) => {
      if (finished) return;
      finished = true;
      off();
      clearInterval(interval);
      clearTimeout(deadline);
      const code =
        reason === 'session_exit' ? s.exited?.exitCode : reason === 'stdin_read' ? exitCode : undefined;
      const elapsedMs = Date.now() - startedAt;
      sendOutputFromHistory(s.history, startSeq, cfg.maxReadBytes).then(
        ({ output, truncated }) =>
          resolve({
            reason,
            output,
            truncated,
            ...(code !== undefined ? { exitCode: code } : {}),
            elapsedMs,
          }),
        reject,
      );
    };
    const off = s.watch({
      output: () => {
        lastOutputAt = Date.now();
      },
      fact: (f) => {
        if (f.type === 'promptStart' || f.type === 'promptEnd') promptSeen = true;
        else if (f.type === 'commandStarted') {
          promptSeen = false;
          exitCode = undefined;
        } else if (f.type === 'commandFinished') exitCode = f.exitCode;
      },
      exit: () => finish('session_exit'),
    });
    const poll = (outputCaughtUp = false) => {
      if (finished) return;
      const now = Date.now();
      let topIsForeground: boolean | undefined;
      let topWaitsForInput: boolean | undefined;
      let confirmed = false;
      if (tty) {
        // The first poll runs one interval after the write: the probe never sees the moment before it.
        const p = probeTty(s.pid, tty);
        topIsForeground = p?.topIsForeground;
        topWaitsForInput = p?.topWaits;
        const fresh = p && !p.busy ? newWaits(p.waits, before) : [];
        if (fresh.length === 0) hitAt = undefined;
        else if (hitAt !== undefined && lastOutputAt <= hitAt) confirmed = true;
        else hitAt = now;
      } else if (process.platform === 'linux') {
        const st = readProcStat(s.pid);
        topIsForeground = st ? st.tpgid === st.pgrp : undefined;
      }
      const reason = endReason({
        now,
        deadline: startedAt + req.timeoutMs,
        idleMs,
        promptGraceMs: cfg.promptGraceMs,
        exited: !s.alive,
        promptSeen,
        lastOutputAt,
        topIsForeground,
        topWaitsForInput,
        ttyWaitConfirmed: confirmed,
      });
      if (!reason) return;
      // /proc shows the present, but output the shell wrote before it sat down to wait can still
      // be in the kernel: timers run before I/O in an event-loop turn, and a starved daemon is a
      // turn behind. Decide again after this turn's reads (which may bring facts that undo it).
      if (outputCaughtUp) finish(reason);
      else setImmediate(() => poll(true));
    };
    interval = setInterval(poll, cfg.pollIntervalMs);
    deadline = setTimeout(poll, req.timeoutMs);
    if (typed) {
      try {
        s.write(Buffer.from(req.data, 'utf8'));
      } catch (err) {
        finished = true;
        off();
        clearInterval(interval);
        clearTimeout(deadline);
        reject(err);
      }
    }
  });
}
