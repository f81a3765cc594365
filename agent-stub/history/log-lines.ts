import { vtToPlainText } from './plain-text.js';
import type { LogLineView } from './session-log.js';

/** Bytes read from the log per step while looking for line ends. */
const READ_STEP_BYTES = 256 * 1024;
/**
 * Raw log bytes one page reads at most (from the index mark before the page to its end): a page
 * of lines far longer than the reply's byte bound ends early (`truncated`) instead of reading on.
 */
export const LOG_PAGE_RAW_BYTES = 16 * 1024 * 1024;

const LF = 0x0a;

/** A page of a session's log by absolute line number. */
export interface LogLinePage {
  /** Plain text, oldest first. */
  lines: string[];
  /** `[lineBegin, lineEnd)`: absolute line numbers (line 0 is the session's first line). */
  lineBegin: number;
  lineEnd: number;
  /** Lines printed so far (an unterminated last line counts). */
  totalLines: number;
  /** The oldest line the log still holds whole. */
  historyStartLine: number;
  truncated: boolean;
}

export interface LogLineSource {
  lines(): LogLineView;
  read(from: number, to: number): Promise<Buffer | undefined>;
}

/**
 * Part of a log a read is limited to (a command's output): the bytes `[fromSeq, toSeq)`, which are
 * the lines `[lineBegin, lineEnd)` (the first and last of them may hold bytes outside it: those
 * are left out).
 */
export interface LogByteRange {
  fromSeq: number;
  toSeq: number;
  lineBegin: number;
  lineEnd: number;
}

/**
 * The lines `[from, from + count)` of a log as plain text (escape sequences and controls handled
 * as in a send's output, plain-text.ts), at most `maxBytes` (the newest lines of the page are
 * left for the next page; a single longer line keeps its first bytes). A `from` older than the log
 * holds starts the page at `historyStartLine`. With `range`, only its bytes are read (lines
 * outside it are not returned). Undefined when a segment was dropped during the read (the caller
 * asks again).
 */
export async function readLogLines(
  log: LogLineSource,
  from: number,
  count: number,
  maxBytes: number,
  range?: LogByteRange,
): Promise<LogLinePage | undefined> {
  const v = log.lines();
  const totalLines = v.index.lfCount + (v.index.atLineStart ? 0 : 1);
  const lastLine = range ? Math.min(range.lineEnd, totalLines) : totalLines;
  const head = range ? Math.min(range.toSeq, v.head) : v.head;
  const skipTo = range?.fromSeq ?? 0;
  const begin = Math.min(Math.max(from, v.firstLine, range?.lineBegin ?? 0), lastLine);
  const page: LogLinePage = {
    lines: [],
    lineBegin: begin,
    lineEnd: begin,
    totalLines,
    historyStartLine: Math.min(v.firstLine, totalLines),
    truncated: false,
  };
  if (begin >= lastLine || count === 0) return page;
  const mark = v.index.markAtOrBefore(begin);
  let line = mark && mark.seq >= v.start ? mark.line : v.lineAtStart;
  let pos = mark && mark.seq >= v.start ? mark.seq : v.start;
  let cur: Buffer[] = [];
  let bytes = 0;
  let raw = 0;
  /** False once the page is full. */
  const emit = (): boolean => {
    const text = vtToPlainText(Buffer.concat(cur));
    cur = [];
    const b = Buffer.byteLength(text) + 1;
    if (bytes + b > maxBytes) {
      page.truncated = true;
      if (page.lines.length === 0) page.lines.push(utf8Head(text, maxBytes - 1));
      return false;
    }
    bytes += b;
    page.lines.push(text);
    return page.lines.length < count;
  };
  let more = true;
  while (more && pos < head) {
    if (raw >= LOG_PAGE_RAW_BYTES) {
      page.truncated = true;
      if (page.lines.length === 0 && cur.length > 0) emit();
      more = false;
      break;
    }
    const end = Math.min(head, pos + READ_STEP_BYTES);
    const chunk = await log.read(pos, end);
    if (!chunk) return undefined;
    raw += chunk.length;
    let i = 0;
    while (more && i < chunk.length) {
      const lf = chunk.indexOf(LF, i);
      const wanted = line >= begin;
      // Bytes of the range's first line before the range are not part of it.
      if (wanted) cur.push(chunk.subarray(Math.max(i, skipTo - pos), lf < 0 ? chunk.length : lf));
      if (lf < 0) break;
      if (wanted) more = emit();
      line++;
      i = lf + 1;
    }
    pos = end;
  }
  // The unterminated newest line (or the range's last line, cut where the range ends).
  if (more && pos >= head && line >= begin && line < lastLine) emit();
  page.lineEnd = begin + page.lines.length;
  return page;
}

/** The first `maxBytes` bytes of `text`, cut at a UTF-8 character boundary. */
function utf8Head(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  let cut = Math.max(0, maxBytes);
  while (cut > 0 && (buf[cut] & 0xc0) === 0x80) cut--;
  return buf.subarray(0, cut).toString('utf8');
}
