import type { IBufferLine, Terminal } from '@xterm/headless';
import { warnShapeOnce } from './shape-warning.js';

/**
 * The one place the stub reaches past @xterm/headless's public API (the way its serialize addon
 * does): reading a row's cell words directly, several times faster than a getCell() per cell.
 * Written against {@link XTERM_HEADLESS_PINNED} (package.json pins it exactly); checked when the
 * first model is made ({@link checkXtermShape}), and per row: when the layout differs, callers
 * take the public per-cell path and the daemon's log says so once.
 * Contract test: test/unit/adapter-xterm-headless.test.ts.
 */
export const XTERM_HEADLESS_PINNED = '6.0.0';

/** Words per cell: content (code point, combined flag, width), foreground, background. */
export const CELL_WORDS = 3;
export const CODEPOINT_MASK = 0x1fffff;
export const COMBINED_FLAG = 0x200000;
const WIDTH_SHIFT = 22;

interface LineInternals {
  _line?: { _data?: unknown };
}

/** The row's cell words, or undefined when they cannot be read. */
export function rowWords(line: IBufferLine): Uint32Array | undefined {
  // Not wire data: @xterm/headless's internal cell array (checked for presence, read-only).
  const data = (line as unknown as LineInternals)._line?._data;
  return data instanceof Uint32Array && data.length >= line.length * CELL_WORDS ? data : undefined;
}

/** Columns a cell's content word occupies (0 for the right half of a wide character). */
export function widthOf(word: number): number {
  return word >>> WIDTH_SHIFT;
}

/**
 * Writes the row's text into `out` when it is plain printable ASCII with default attributes
 * (empty cells inside the row become spaces, trailing ones are left out) and returns its length;
 * -1 when the row needs the general path.
 */
export function plainAsciiRow(line: IBufferLine, out: Uint8Array): number {
  const data = rowWords(line);
  const cols = line.length;
  if (!data || out.length < cols) return -1;
  let end = 0;
  for (let i = 0; i < cols; i++) {
    const at = i * CELL_WORDS;
    if (data[at + 1] !== 0 || data[at + 2] !== 0) return -1;
    const word = data[at];
    const cp = word & CODEPOINT_MASK;
    if (word & COMBINED_FLAG || cp > 0x7e || (cp !== 0 && cp < 0x20)) return -1;
    if (cp === 0) out[i] = 0x20;
    else {
      out[i] = cp;
      end = i + 1;
    }
  }
  return end;
}

/**
 * Checks the private shape on a live terminal once per thread (the first model made): a row of a fresh
 * terminal must expose its cell words, and they must read as the public API does. Logs loudly
 * once when not; callers then get undefined from {@link rowWords} for rows they cannot read.
 * Returns the problem, or undefined when the shape is the pinned one.
 */
let checked: { problem?: string } | undefined;
export function checkXtermShape(term: Terminal): string | undefined {
  if (checked) return checked.problem;
  const line = term.buffer.active.getLine(0);
  let problem: string | undefined;
  if (!line) problem = 'a fresh terminal has no row 0';
  else {
    const words = rowWords(line);
    if (!words) problem = "a row has no Uint32Array '_line._data' of 3 words per cell";
    else if (line.getCell(0)?.getCode() !== (words[0]! & CODEPOINT_MASK))
      problem = 'the first cell word does not hold the code point getCell() reports';
  }
  if (problem) warnShapeOnce('@xterm/headless', XTERM_HEADLESS_PINNED, problem, 'rows are read cell by cell');
  checked = { problem };
  return problem;
}
