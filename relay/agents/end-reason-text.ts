import type { AgentAwaiting, AgentEndReason } from '../../provider/contract.js';

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

/** What to do for each kind of input wait (`awaiting`, with `stdin_read`), in the model's words. */
export const AWAITING_TEXT: Record<AgentAwaiting, string> = {
  prompt: 'Awaiting: the shell prompt. Send the next command.',
  password:
    'Awaiting: a password or other secret (the terminal does not echo what is typed). Never type a secret the user did not give you for this: ask the user, or terminal_signal INT to cancel.',
  pager:
    'Awaiting: a pager (less, more, or what man and git started) showing output page by page. Send "q" to leave it; to get the whole output, rerun with the pager off (git --no-pager, PAGER=cat).',
  program:
    'Awaiting: a program reading input (a REPL, `read`, a [y/N] question). Answer it as its output asks, or terminal_signal INT to interrupt.',
  unknown: 'Awaiting: something reading input; the host cannot tell what. Look at the output before typing.',
};

/** The words for a send result: its end reason's meaning, and for `stdin_read` what the wait is for. */
export function sendMeaning(r: { reason: AgentEndReason; awaiting?: AgentAwaiting }): string {
  return r.awaiting ? `${END_REASON_TEXT[r.reason]} ${AWAITING_TEXT[r.awaiting]}` : END_REASON_TEXT[r.reason];
}
