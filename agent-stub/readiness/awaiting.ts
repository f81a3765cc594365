import type { AgentAwaiting } from '../../provider/contract.js';
import type { TtyModes } from './termios-reader.js';

/**
 * Pagers by process name: what `man` and `git` start too (`pager` is Debian's alternatives name,
 * which is what the process is called when started through it).
 */
const PAGERS = new Set(['less', 'more', 'most', 'pg', 'pager', 'lv']);

/** What the host knows when a send ended with `stdin_read` (see {@link awaitingOf}). */
export interface AwaitingFacts {
  /** The send ended at our prompt marker with the shell in the foreground (end-rules.ts). */
  atPrompt: boolean;
  /** Names of the foreground group's processes; undefined where /proc does not tell. */
  foreground: readonly string[] | undefined;
  /** The tty's flags; undefined when they could not be read (only asked for when needed). */
  modes: TtyModes | undefined;
}

export function isPager(name: string): boolean {
  return PAGERS.has(name);
}

/**
 * What the wait is for, in order: our prompt; a pager in the foreground group; a program reading
 * in canonical mode with echo off (a password prompt: `read -s`, sudo, ssh; readline-style
 * prompts turn canonical mode off and are not passwords); any other program. `unknown` where a
 * fact that decides is missing. Pure (test/unit/agent-awaiting.test.ts).
 */
export function awaitingOf(f: AwaitingFacts): AgentAwaiting {
  if (f.atPrompt) return 'prompt';
  if (!f.foreground) return 'unknown';
  if (f.foreground.some(isPager)) return 'pager';
  if (!f.modes) return 'unknown';
  return f.modes.icanon && !f.modes.echo ? 'password' : 'program';
}

/** Whether {@link awaitingOf} needs the tty's flags to decide (reading them costs a process). */
export function needsModes(f: Omit<AwaitingFacts, 'modes'>): boolean {
  return !f.atPrompt && f.foreground !== undefined && !f.foreground.some(isPager);
}
