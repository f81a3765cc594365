import type { LinePosition } from '../history/command-records.js';
import type { OutputRing } from '../history/output-ring.js';
import { utf8Tail, vtToPlainText } from '../history/plain-text.js';

/** Raw output rendered for a send's result, as a multiple of the byte bound (escapes take room). */
const RAW_WINDOW_FACTOR = 4;
const NEWLINE = 0x0a;

/** What a send reads its output from (OutputHistory). */
export interface SendHistory {
  readonly start: number;
  readonly head: number;
  read(from: number, to?: number): Promise<Buffer | undefined>;
  /** The line the next byte belongs to (the log's numbering); undefined without a log. */
  linePosition?(): LinePosition | undefined;
}

/** A send's output as its result carries it (AgentSendResult). */
export interface SendOutput {
  output: string;
  truncated: boolean;
  omittedFromLine?: number;
  omittedLines?: number;
}

/** Log lines of a rendered window: the send's first line, and the line of the window's end. */
export interface SendLines {
  /** The line the send's first byte belongs to. */
  startLine: number;
  /** The line the byte at the window's end would belong to (the log's line count there, LFs). */
  headLine: number;
}

/**
 * The output `[fromSeq, head)` as plain text, its newest whole lines up to `maxBytes` bytes (see
 * {@link renderSendOutput}); from the RAM ring only (tests; a send reads the whole history).
 */
export function sendOutput(ring: OutputRing, fromSeq: number, maxBytes: number): SendOutput {
  const from = Math.max(fromSeq, ring.start, ring.head - RAW_WINDOW_FACTOR * maxBytes);
  return renderSendOutput(ring.slice(from) ?? Buffer.alloc(0), from > fromSeq, maxBytes);
}

/**
 * {@link sendOutput} from the session's history (the log reaches further back than the RAM tail),
 * with where the output's omitted lines lie in the log when it was cut (`startLine`: the line the
 * send began on, undefined without a log).
 */
export async function sendOutputFromHistory(
  history: SendHistory,
  fromSeq: number,
  startLine: number | undefined,
  maxBytes: number,
): Promise<SendOutput> {
  // The head and its line together, before the read: output arriving meanwhile is not counted.
  const head = history.head;
  const headPos = startLine !== undefined ? history.linePosition?.() : undefined;
  const from = Math.max(fromSeq, history.start, head - RAW_WINDOW_FACTOR * maxBytes);
  const raw = (await history.read(from, head)) ?? Buffer.alloc(0);
  const lines = headPos && startLine !== undefined ? { startLine, headLine: headPos.line } : undefined;
  return renderSendOutput(raw, from > fromSeq, maxBytes, lines);
}

/**
 * Raw output → a send's `output`: each line rendered as plain text (plain-text.ts) like a read by
 * line renders it, the newest whole lines that fit in `maxBytes` (a newest line longer than that
 * keeps its last bytes). `cutStart`: the window begins inside the output, so its first partial
 * line is dropped (it may start inside an escape sequence). With `lines`, a cut output says which
 * log lines it left out. Pure.
 */
export function renderSendOutput(
  raw: Buffer,
  cutStart: boolean,
  maxBytes: number,
  lines?: SendLines,
): SendOutput {
  const segments = splitLines(raw);
  // A window that begins inside the output starts after its first line break, when it has one.
  const lo = cutStart && segments.length > 1 ? 1 : 0;
  // An empty last segment (the output ends with a line break) is no line.
  const end =
    segments.length > lo && segments[segments.length - 1].length === 0
      ? segments.length - 1
      : segments.length;
  const kept: string[] = [];
  let bytes = 0;
  /** The first segment shown whole. */
  let firstWhole = end;
  for (let j = end - 1; j >= lo; j--) {
    const text = vtToPlainText(segments[j]);
    const need = Buffer.byteLength(text) + (kept.length > 0 ? 1 : 0);
    if (bytes + need > maxBytes) {
      if (kept.length === 0) kept.push(utf8Tail(text, maxBytes).text);
      break;
    }
    bytes += need;
    kept.push(text);
    firstWhole = j;
  }
  kept.reverse();
  // A window without a line break that begins inside the output: its one line is not whole.
  if (cutStart && lo === 0 && firstWhole === 0) firstWhole = 1;
  const truncated = cutStart || firstWhole > lo;
  const out: SendOutput = { output: kept.join('\n'), truncated };
  if (truncated && lines) {
    // Segment j is log line `headLine - (segments.length - 1 - j)`.
    const firstShown = lines.headLine - (segments.length - 1 - firstWhole);
    out.omittedFromLine = lines.startLine;
    out.omittedLines = Math.max(0, firstShown - lines.startLine);
  }
  return out;
}

/** The bytes between line breaks (the last segment: after the last one, maybe empty). */
function splitLines(raw: Buffer): Buffer[] {
  const segments: Buffer[] = [];
  let i = 0;
  for (let lf = raw.indexOf(NEWLINE); lf >= 0; lf = raw.indexOf(NEWLINE, i)) {
    segments.push(raw.subarray(i, lf));
    i = lf + 1;
  }
  segments.push(raw.subarray(i));
  return segments;
}
