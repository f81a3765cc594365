import type { AgentReadResult } from '../../provider/contract.js';
import { utf8Tail } from '../history/plain-text.js';

/** Bytes a line costs in a page: its text and a newline. */
const lineBytes = (s: string) => Buffer.byteLength(s, 'utf8') + 1;

/**
 * One page of `all` (oldest first): the `count` lines ending `offset` lines back from the newest,
 * cut to `maxBytes` by dropping the oldest lines of the page (a single line longer than the bound
 * keeps its newest bytes, cut at a UTF-8 boundary). `[lineBegin, lineEnd)` is counted back from
 * the newest line, so the next older page starts at `offset = lineEnd`.
 */
export function pageLines(
  all: readonly string[],
  offset: number,
  count: number,
  maxBytes: number,
): AgentReadResult {
  const total = all.length;
  const end = Math.max(0, total - offset);
  const begin = Math.max(0, end - count);
  const lines: string[] = [];
  let bytes = 0;
  let truncated = false;
  for (let i = end - 1; i >= begin; i--) {
    const b = lineBytes(all[i]);
    if (bytes + b > maxBytes) {
      truncated = true;
      if (lines.length === 0) lines.push(utf8Tail(all[i], maxBytes - 1).text);
      break;
    }
    bytes += b;
    lines.push(all[i]);
  }
  lines.reverse();
  const lineBegin = total - end;
  return { lines, lineBegin, lineEnd: lineBegin + lines.length, totalLines: total, truncated };
}
