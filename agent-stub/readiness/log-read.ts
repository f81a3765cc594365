import type { AgentReadResult } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { type CommandRecord, describeCommand, type OutputPoint } from '../history/command-records.js';
import { type LogByteRange, readLogLines } from '../history/log-lines.js';
import type { SessionLog } from '../history/session-log.js';

/** A page is read again this often when the log drops a segment under it (a flood). */
const READ_ATTEMPTS = 3;

/**
 * An agent read by absolute line number (`from`): a page of the session's output log, the whole
 * history rather than the model's scrollback. Fails with INVALID_ARGUMENT when the session keeps
 * no log (history off, or it failed: reads by `offset` still work).
 */
export async function readLogPage(
  id: string,
  log: SessionLog | undefined,
  from: number,
  count: number,
  maxBytes: number,
  range?: LogByteRange,
): Promise<AgentReadResult> {
  for (let i = 0; i < READ_ATTEMPTS && log?.healthy; i++) {
    const page = await readLogLines(log, from, count, maxBytes, range);
    if (page) return { ...page, logLines: page.totalLines };
  }
  if (!log?.healthy)
    throw new PtyRelayError(
      'INVALID_ARGUMENT',
      `${id} keeps no output log (history off or failed): read it by offset`,
      { id },
    );
  throw new PtyRelayError('TIMEOUT', `${id}: its log dropped history faster than a page could be read`, {
    id,
  });
}

/** Where the log stands, added to a read by offset so an agent knows how far `from` reaches. */
export function logExtent(
  log: SessionLog | undefined,
): Pick<AgentReadResult, 'logLines' | 'historyStartLine'> {
  if (!log?.healthy) return {};
  const v = log.lines();
  return {
    logLines: v.index.lfCount + (v.index.atLineStart ? 0 : 1),
    historyStartLine: v.firstLine,
  };
}

/**
 * A page of one command's output (`agentRead` by `command`): the log's bytes between the
 * command's start and end (its output so far while it runs, `head`), from line `from` (default:
 * its first line). `totalLines` is the command's end line, so the last page has `lineEnd ==
 * totalLines`; `logLines` stays the log's.
 */
export async function readCommandPage(
  id: string,
  log: SessionLog | undefined,
  rec: CommandRecord,
  head: OutputPoint,
  page: { from?: number; count: number; maxBytes: number },
): Promise<AgentReadResult> {
  const command = describeCommand(rec, head);
  const { lineBegin, lineEnd } = command;
  if (lineBegin === undefined || lineEnd === undefined)
    throw new PtyRelayError(
      'INVALID_ARGUMENT',
      `${id} kept no output log when ${rec.id} ran: its output cannot be read by command`,
      { id },
    );
  const range = { fromSeq: rec.start.seq, toSeq: (rec.end ?? head).seq, lineBegin, lineEnd };
  const r = await readLogPage(id, log, page.from ?? lineBegin, page.count, page.maxBytes, range);
  return { ...r, totalLines: lineEnd, command };
}
