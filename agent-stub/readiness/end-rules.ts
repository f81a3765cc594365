import type { AgentEndReason } from '../../provider/contract.js';

/** What a send knows at one readiness poll (see {@link endReason}). */
export interface SendObservation {
  now: number;
  /** Absolute end of the wait (armed when the send started). */
  deadline: number;
  idleMs: number;
  promptGraceMs: number;
  /** The terminal's top process has exited. */
  exited: boolean;
  /** Our prompt marker was seen since the send's write (no command started after it). */
  promptSeen: boolean;
  /** Last output, or the send's start when there was none since. */
  lastOutputAt: number;
  /** The foreground process group is the top process's (the shell); undefined when unknown. */
  topIsForeground: boolean | undefined;
  /**
   * The top process (the shell) is blocked waiting for tty input (/proc); undefined when unknown.
   * A prompt printed while typed text was still unread (the send was typed before the shell's
   * first prompt, or while a command ran) is followed by the shell reading that text, not waiting.
   */
  topWaitsForInput: boolean | undefined;
  /** /proc showed a new wait for tty input at two polls with no output in between. */
  ttyWaitConfirmed: boolean;
}

/**
 * The end reason of a send at this poll, or undefined to keep waiting. In order: the top process
 * exited; our prompt marker, quiet for the grace, and the shell in the foreground (and, where /proc
 * tells, waiting for input at that prompt); the foreground group provably waiting for tty input;
 * silence past the idle threshold; the absolute timeout.
 * Pure (tested exhaustively in test/unit/agent-end-rules.test.ts).
 */
export function endReason(o: SendObservation): AgentEndReason | undefined {
  if (o.exited) return 'session_exit';
  if (atShellPrompt(o) && o.now - o.lastOutputAt >= o.promptGraceMs) return 'stdin_read';
  if (o.ttyWaitConfirmed) return 'stdin_read';
  if (o.now - o.lastOutputAt >= o.idleMs) return 'inferred_idle';
  if (o.now >= o.deadline) return 'timeout';
  return undefined;
}

/**
 * Our prompt marker was seen since the write, the shell holds the foreground and (where /proc
 * tells) waits for input at it: with the prompt grace of quiet, the prompt rule of
 * {@link endReason}. A `stdin_read` (from either rule) while it holds waits at the shell's prompt
 * (`awaiting: prompt`); otherwise a program waits.
 */
export function atShellPrompt(o: SendObservation): boolean {
  return o.promptSeen && o.topIsForeground !== false && o.topWaitsForInput !== false;
}
