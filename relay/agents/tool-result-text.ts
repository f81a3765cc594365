import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type {
  AgentCommand,
  AgentCommandsResult,
  AgentReadResult,
  AgentSendResult,
} from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { DEFAULT_AGENT_READ_LINES } from '../../provider/wire/agent-messages.js';
import { DEFAULT_COMMANDS_COUNT } from '../../provider/wire/command-messages.js';
import { AWAITING_TEXT, END_REASON_TEXT, sendMeaning } from './end-reason-text.js';

/**
 * The words of the terminal tools (mcp-tools.ts): their descriptions and the text of their
 * results, which is what a model reads first.
 */

export const SEND_DESCRIPTION = `Types text into an agent terminal (newlines are Enter; a final Enter is added unless enter is false) and waits until one of four end reasons, returned as "reason":
- stdin_read: ${END_REASON_TEXT.stdin_read}
- inferred_idle: ${END_REASON_TEXT.inferred_idle}
- timeout: ${END_REASON_TEXT.timeout}
- session_exit: ${END_REASON_TEXT.session_exit}
With stdin_read, "awaiting" says what the input wait is for, decided on the host:
- prompt: ${AWAITING_TEXT.prompt}
- password: ${AWAITING_TEXT.password}
- pager: ${AWAITING_TEXT.pager}
- program: ${AWAITING_TEXT.program}
- unknown: ${AWAITING_TEXT.unknown}
Empty text types nothing and waits for the next end reason. "output" is what the terminal printed during this send as plain text, at most 256 KiB of whole lines: when "truncated" is true only the newest lines are shown, and "omittedFromLine" and "omittedLines" say which log lines were left out (terminal_read with from = omittedFromLine and count = omittedLines returns them). "commandIds" names the commands that started during the send (terminal_read with command reads one's whole output). One send at a time per terminal (SEND_IN_PROGRESS otherwise); terminal_read and terminal_signal work while a send waits.`;

export const READ_DESCRIPTION = `Reads a page of an agent terminal's text (its screen and scrollback, at least the last 10,000 lines) as plain lines, oldest first. "offset" counts lines back from the newest line (0 = the page ends with the newest line); the page covers [lineBegin, lineEnd) in that same back-from-newest count. To page further back, call again with offset = lineEnd; stop when lineEnd equals totalLines. A page holds at most "count" lines (default ${DEFAULT_AGENT_READ_LINES}) and 256 KiB ("truncated" is true when the byte bound cut it). The whole output history (the terminal's log on disk, beyond the scrollback) is read with "from" instead of "offset": an absolute line number (0 = the first line the terminal printed), the page runs forward as [lineBegin, lineEnd) in absolute numbers; continue with from = lineEnd until lineEnd equals totalLines. "historyStartLine" is the oldest line the log still holds (a "from" before it starts there); "logLines" (also on offset reads) is the log's line count, so offset line k is about log line logLines - 1 - k for plain line output. "command" (an id from terminal_commands, e.g. c3) reads exactly that command's output from the log, even long after it left the scrollback: the page runs forward from the command's first line (or from "from"), totalLines is the command's end line; continue with from = lineEnd until lineEnd equals totalLines.`;

export const COMMANDS_DESCRIPTION = `Lists the commands the terminal's shell ran, newest first (at most "count", default ${DEFAULT_COMMANDS_COUNT}): id (c1, c2, … stable for the terminal's life), command line, cwd, start time, duration, exit code (or running), and the log lines [lineBegin, lineEnd) of its output. terminal_read with command = id returns exactly that output. Only shells with ptyrelay's shell integration (bash, zsh) report commands; for others "available" is false.`;

/** The first line of a `from` page's text: where it sits in the log and where to go next. */
export function logPageHead(id: string, from: number, r: AgentReadResult): string {
  const gap =
    r.lineBegin > from && r.lineBegin === r.historyStartLine
      ? ` (history begins at line ${r.historyStartLine}: older lines were dropped)`
      : '';
  const next = r.lineEnd < r.totalLines ? `; newer: from=${r.lineEnd}` : '; this reaches the newest line';
  return `${id}: log lines [${r.lineBegin}, ${r.lineEnd}) of ${r.totalLines}${gap}${r.truncated ? ' (cut by the byte bound)' : ''}${next}`;
}

/** The first line of an `offset` page's text: where it sits back from the newest line and what is older. */
export function offsetPageHead(id: string, r: AgentReadResult): string {
  const more = r.lineEnd < r.totalLines ? `; older: offset=${r.lineEnd}` : '; this reaches the oldest line';
  return `${id}: lines [${r.lineBegin}, ${r.lineEnd}) back from the newest of ${r.totalLines}${r.truncated ? ' (cut by the byte bound)' : ''}${more}`;
}

/** The first line of a `command` page's text: the command, the page's lines and what follows. */
export function commandPageHead(id: string, r: AgentReadResult): string {
  const c = r.command;
  const what = c ? `${c.id} (${commandState(c)}: ${c.commandLine || '?'})` : 'command';
  const gap =
    c?.lineBegin !== undefined && r.lineBegin > c.lineBegin && r.lineBegin === r.historyStartLine
      ? ` (history begins at line ${r.historyStartLine}: its older lines were dropped)`
      : '';
  const next =
    r.lineEnd < r.totalLines
      ? `; more: from=${r.lineEnd}`
      : c?.running
        ? '; its output so far'
        : '; its last line';
  return `${id}: ${what} output lines [${r.lineBegin}, ${r.lineEnd}) of [${c?.lineBegin ?? r.lineBegin}, ${r.totalLines})${gap}${r.truncated ? ' (cut by the byte bound)' : ''}${next}`;
}

export function sendResultText(id: string, r: AgentSendResult): string {
  const code = r.exitCode !== undefined ? ` exitCode=${r.exitCode}` : '';
  const awaiting = r.awaiting ? ` awaiting=${r.awaiting}` : '';
  const commands = r.commandIds?.length ? ` commands=${r.commandIds.join(',')}` : '';
  const left =
    r.omittedFromLine !== undefined
      ? `; the ${r.omittedLines} lines left out: terminal_read from=${r.omittedFromLine} count=${r.omittedLines}`
      : '; page back with terminal_read';
  const cut = r.truncated ? ` (output truncated: newest lines shown${left})` : '';
  return `${id}: reason=${r.reason}${awaiting}${code}${commands} after ${r.elapsedMs} ms${cut}\n${sendMeaning(r)}\n--- output ---\n${r.output}`;
}

/** `exit 0, 1.2 s`, `running`, `ended` (no exit code reported). */
function commandState(c: AgentCommand): string {
  if (c.running) return 'running';
  const took = c.durationMs !== undefined ? `, ${(c.durationMs / 1000).toFixed(1)} s` : '';
  return `${c.exitCode !== undefined ? `exit ${c.exitCode}` : 'ended'}${took}`;
}

/** One line per command, newest first. */
export function commandsText(id: string, r: AgentCommandsResult): string {
  if (!r.available && r.total === 0)
    return `${id}: command records are unavailable: this terminal's shell reports no commands (ptyrelay's shell integration runs in bash and zsh)`;
  if (r.commands.length === 0) return `${id}: no commands yet`;
  const head = `${id}: ${r.commands.length} of ${r.total} commands, newest first`;
  const lines = r.commands.map((c) => {
    const range = c.lineBegin !== undefined ? ` lines [${c.lineBegin}, ${c.lineEnd})` : '';
    const started = new Date(c.startedAt).toISOString();
    return `${c.id}  ${commandState(c)}${range}  started ${started}${c.cwd ? `  cwd=${c.cwd}` : ''}  $ ${c.commandLine}`;
  });
  return [head, ...lines].join('\n');
}

/** Runs a tool body; ptyrelay errors become tool errors the model can read (code and message). */
export async function runTool(fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (err) {
    const msg = isPtyRelayError(err) ? `${err.code}: ${err.message}` : `error: ${(err as Error).message}`;
    return { isError: true, content: [{ type: 'text', text: msg }] };
  }
}
