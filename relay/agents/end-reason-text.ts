import type { AgentEndReason } from '../../provider/contract.js';

/** What each end reason means, in the words the model gets with every send result. */
export const END_REASON_TEXT: Record<AgentEndReason, string> = {
  stdin_read:
    "The terminal is waiting for input: the command finished and the shell prompt is back (exitCode is the command's when shown), or a program such as a REPL is asking for input.",
  inferred_idle:
    'Output went quiet, so the wait stopped. This does NOT mean the command finished: it may still be running. Send empty text to keep waiting, terminal_read to look, or terminal_signal to interrupt.',
  timeout:
    'The wait reached timeoutMs. This does NOT mean the command finished: it may still be running. Send empty text to keep waiting, or terminal_signal (SIGINT) to interrupt it.',
  session_exit:
    "The terminal's top process (its shell) exited; exitCode is the shell's, not a foreground command's. The terminal takes no more input: open a new one.",
};
