/**
 * The agent terminals' part of the IPtyProvider contract (provider/contract.ts re-exports it):
 * the owner a daemon keeps with an agent terminal, and the types of agent send, read and command
 * records (docs/agents.md).
 */

/** An agent terminal's owner as its daemon keeps it. */
export interface AgentTag {
  /** The owner's key (`agent:NAME`, `mcp:…`, `stdio:…`). */
  owner: string;
  /** The agent service's id of the terminal (`term-3`): the same id after a relay restart. */
  id: string;
  /** Epoch ms the owner was last known connected to a relay. */
  seenAt: number;
}

/**
 * Why an agent send (or wait) came back. Only `stdin_read` says the terminal is waiting for
 * input; `inferred_idle` and `timeout` mean "stopped waiting here", the command may still run;
 * `session_exit` is about the terminal's top process (its shell), not a foreground command.
 */
export type AgentEndReason = 'stdin_read' | 'inferred_idle' | 'timeout' | 'session_exit';

/**
 * What a terminal that ended a send with `stdin_read` waits for, decided on the host from facts:
 * `prompt` our prompt marker with the shell in the foreground; `password` a foreground program
 * reads with the tty in canonical mode and echo off; `pager` the foreground runs a pager (`less`,
 * `more`, …); `program` any other program reading (a REPL, `read`, a question); `unknown` where
 * the host cannot tell (no /proc, or the tty's flags could not be read).
 */
export type AgentAwaiting = 'prompt' | 'password' | 'pager' | 'program' | 'unknown';

export interface AgentSendOptions {
  /** Absolute bound of the wait, armed when the send starts (ms). */
  timeoutMs: number;
  /** Silence after which the send ends with `inferred_idle` (ms; default: the stub's setting). */
  idleMs?: number;
}

export interface AgentSendResult {
  reason: AgentEndReason;
  /** Output since the send started as plain text, the newest part when cut (at a UTF-8 boundary). */
  output: string;
  /** The output was cut to the byte bound (or its start had already left the retained output). */
  truncated: boolean;
  /** With shell integration: the exit code of the command that finished; for `session_exit`: the top process's. */
  exitCode?: number;
  /** Wall time of the send (ms). */
  elapsedMs: number;
  /** With `stdin_read`: what the input wait is waiting for (see {@link AgentAwaiting}). */
  awaiting?: AgentAwaiting;
  /**
   * With `truncated` and an output log: the lines the output left out, in the log's absolute
   * numbering (a read by `from`): `[omittedFromLine, omittedFromLine + omittedLines)`. The first of
   * them starts before the send (its prompt) when the send began mid-line.
   */
  omittedFromLine?: number;
  omittedLines?: number;
  /** Ids of the commands that started during the send (shell integration), oldest first. */
  commandIds?: string[];
}

export interface AgentReadOptions {
  /** Lines back from the newest line where the page ends (0: the page ends with the newest line). */
  offset?: number;
  /**
   * Instead of `offset`: the absolute line number in the terminal's output log where the page
   * starts (0: the first line the terminal printed); the page runs forward and its
   * `lineBegin`/`lineEnd` are absolute too. Reaches the whole log, not just the model's scrollback.
   */
  from?: number;
  /** Lines wanted (default 500); the byte bound may return fewer. */
  count?: number;
  /**
   * A command's output (its id from `commands`, e.g. `c3`), from the output log: the page is
   * limited to that output, runs forward from `from` (default: the command's first line) in
   * absolute line numbers, and its `totalLines` is the command's end line. Excludes `offset`.
   */
  command?: string;
}

/**
 * A command the terminal's shell ran, as shell integration reported it (bash, zsh), kept by the
 * stub for the terminal's life. Its output is the log lines `[lineBegin, lineEnd)` (absolute, as
 * a read by `from`), exactly the bytes between the command's start and end markers.
 */
export interface AgentCommand {
  /** `c1`, `c2`, … per terminal, in the order the commands started. */
  id: string;
  /** The command line as the shell's history has it (`''` when it did not enter the history). */
  commandLine: string;
  /** The shell's working directory when the command started. */
  cwd?: string;
  /** When it started (epoch ms). */
  startedAt: number;
  /** Still running (its end marker has not come). */
  running: boolean;
  /** How long it ran (ms), once finished. */
  durationMs?: number;
  /** Its exit code, once finished (absent when the shell went away before reporting one). */
  exitCode?: number;
  /** Its output's lines in the log; absent without a log. While it runs, `lineEnd` is the lines so far. */
  lineBegin?: number;
  lineEnd?: number;
}

export interface AgentCommandsOptions {
  /** Newest records wanted (default 100). */
  count?: number;
}

export interface AgentCommandsResult {
  /** Shell integration reports commands in this terminal (bash, zsh); without it there are none. */
  available: boolean;
  /** Newest first. */
  commands: AgentCommand[];
  /** Commands recorded so far (the ids run `c1` … `c<total>`); the oldest may have been dropped. */
  total: number;
}

export interface AgentReadResult {
  /** In reading order (oldest first). */
  lines: string[];
  /** Half-open range `[lineBegin, lineEnd)` counted back from the newest line (0 = newest). */
  lineBegin: number;
  lineEnd: number;
  /** Lines the terminal's retained text holds. */
  totalLines: number;
  /** Fewer lines than asked because of the byte bound (or a line was cut). */
  truncated: boolean;
  /** Lines in the output log (absolute: the next line printed gets this number), when it has one. */
  logLines?: number;
  /** The oldest line the log still holds whole (older segments were dropped at its cap). */
  historyStartLine?: number;
  /** With `command`: that command's record. */
  command?: AgentCommand;
}
