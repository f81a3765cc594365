import type { IBufferLine } from '@xterm/headless';

/**
 * The one place where the screen model reaches past @xterm/headless's public API (the way its
 * serialize addon does): reading a row's cell words directly, which is several times faster than
 * a getCell() per cell. Checked at run time; when a future version changes the layout, callers
 * take the public per-cell path (and the model tests, which compare with a full emulator, still
 * hold).
 */

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
