import type { IBufferCell, IBufferLine } from '@xterm/headless';
import { CELL_WORDS, CODEPOINT_MASK, COMBINED_FLAG, rowWords, widthOf } from '../adapters/xterm-headless.js';

/** SGR parameters (each prefixed with ';') that select the cell's colours and attributes. */
export function sgrOf(cell: IBufferCell): string {
  if (cell.isAttributeDefault()) return '';
  let s = '';
  if (cell.isBold()) s += ';1';
  if (cell.isDim()) s += ';2';
  if (cell.isItalic()) s += ';3';
  if (cell.isUnderline()) s += ';4';
  if (cell.isBlink()) s += ';5';
  if (cell.isInverse()) s += ';7';
  if (cell.isInvisible()) s += ';8';
  if (cell.isStrikethrough()) s += ';9';
  if (cell.isOverline()) s += ';53';
  s += color(cell.isFgRGB(), cell.isFgPalette(), cell.getFgColor(), 30, 90, 38);
  s += color(cell.isBgRGB(), cell.isBgPalette(), cell.getBgColor(), 40, 100, 48);
  return s;
}

function color(rgb: boolean, palette: boolean, c: number, base: number, bright: number, ext: number): string {
  if (rgb) return `;${ext};2;${(c >>> 16) & 255};${(c >>> 8) & 255};${c & 255}`;
  if (!palette) return '';
  if (c < 8) return `;${base + c}`;
  if (c < 16) return `;${bright + c - 8}`;
  return `;${ext};5;${c}`;
}

/** Builds one row's VT text cell by cell (see encodeRow). */
class RowWriter {
  out = '';
  private cur = '';
  private skipped = 0;
  private erased = 0;

  /** A cell with `sgr` attributes: `chars` ('' for an empty cell) over `width` columns. */
  cell(chars: string, width: number, sgr: string, blankShows: boolean): void {
    if (chars === '' && !blankShows) {
      this.flushErased();
      this.skipped += width;
      return;
    }
    if (this.skipped > 0) {
      this.out += `\x1b[${this.skipped}C`;
      this.skipped = 0;
    }
    if (sgr !== this.cur) {
      this.flushErased();
      this.out += `\x1b[0${sgr}m`;
      this.cur = sgr;
    }
    if (chars === '') this.erased += width;
    else this.out += chars;
  }

  finish(): string {
    this.flushErased();
    return this.out.includes('\x1b[') ? `${this.out}\x1b[0m` : this.out;
  }

  private flushErased(): void {
    if (this.erased > 0) this.out += `\x1b[${this.erased}X\x1b[${this.erased}C`;
    this.erased = 0;
  }
}

/**
 * The VT text that redraws one row on its own: characters with SGR where attributes change,
 * empty cells skipped with cursor moves (so they stay empty), empty cells with a background
 * erased in that colour, trailing default empty cells left out, and a reset at the end.
 */
export function encodeRow(line: IBufferLine, cell: IBufferCell): string {
  const words = rowWords(line);
  const w = new RowWriter();
  if (!words) {
    for (let x = 0; x < line.length; x++) {
      if (!line.getCell(x, cell)) break;
      const width = cell.getWidth();
      if (width > 0)
        w.cell(cell.getChars(), width, sgrOf(cell), !cell.isBgDefault() || cell.isInverse() !== 0);
    }
    return w.finish();
  }
  // Attributes are read through getCell only where the attribute words change.
  let fg = -1;
  let bg = -1;
  let sgr = '';
  let blankShows = false;
  for (let x = 0; x < line.length; x++) {
    const at = x * CELL_WORDS;
    const word = words[at];
    const width = widthOf(word);
    if (width === 0) continue;
    if (words[at + 1] !== fg || words[at + 2] !== bg) {
      fg = words[at + 1];
      bg = words[at + 2];
      line.getCell(x, cell);
      sgr = sgrOf(cell);
      blankShows = !cell.isBgDefault() || cell.isInverse() !== 0;
    }
    const cp = word & CODEPOINT_MASK;
    let chars = '';
    if (word & COMBINED_FLAG) chars = line.getCell(x, cell)?.getChars() ?? '';
    else if (cp !== 0) chars = String.fromCodePoint(cp);
    w.cell(chars, width, sgr, blankShows);
  }
  return w.finish();
}

/** The row's last column holds a character (a soft-wrapped next row continues it directly). */
export function rowIsFull(line: IBufferLine, cell: IBufferCell): boolean {
  if (line.length === 0 || !line.getCell(line.length - 1, cell)) return false;
  return cell.getChars() !== '' || cell.getWidth() === 0;
}
