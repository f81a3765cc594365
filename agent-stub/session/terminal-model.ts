import { SerializeAddon } from '@xterm/addon-serialize';
import xtermHeadless, { type IMarker } from '@xterm/headless';
import { type TerminalPalette, XTVERSION_REPLY, xtermRgb } from '../../provider/terminal-queries.js';
import { checkXtermShape, plainAsciiRow } from '../adapters/xterm-headless.js';
import { CompactScrollback } from './compact-scrollback.js';
import { modelPlainLines } from './model-text.js';
import { encodeRow, rowIsFull } from './row-encoder.js';

const { Terminal } = xtermHeadless;

/**
 * Scrollback rows the emulator itself keeps (they are also in CompactScrollback): enough for a
 * taller screen to pull history back down exactly like the viewer's own terminal does, and
 * small enough that the emulator costs a few hundred KB. Once full it recycles its oldest rows
 * instead of allocating new ones.
 */
export const EMULATOR_SCROLLBACK = 256;
/** A write is cut into pieces that cannot push more rows than this into the emulator's scrollback. */
export const PIECE_ROWS = 120;

/**
 * The marker on the stored rows is replaced only once it lags the newest stored row by more than
 * this many rows; until then the model counts the rows stored after it. A marker costs the
 * emulator several listeners and objects that outlive V8's young generation: one placed after
 * every write made markers 46 of the 81 MB that outlived it in the model worker during 10 s of
 * 50 × `yes` (39 MB in all with this lag; 50 × `yes` peak RSS 233 → 222 MB, medians of 10
 * alternated local runs). Below EMULATOR_SCROLLBACK − PIECE_ROWS, so the rows the next piece
 * trims off the emulator's scrollback never reach the marker.
 */
export const MARK_LAG_ROWS = 128;

/** Rows a REP (repeat character, CSI Ps b) may print at most: 65535 characters, wrapped. */
const repRows = (cols: number) => Math.ceil(65_535 / Math.max(1, cols)) + 1;

/**
 * End of the next piece of `data` from `from`: the longest run whose worst case adds at most
 * `maxRows` rows to the scrollback. Rows come from LF, VT, FF, IND and NEL (ESC D, ESC E and
 * their C1 forms), auto-wrap (one per `cols` bytes) and REP (CSI … b, counted at its maximum).
 * At least one byte.
 */
export function pieceEnd(data: Uint8Array, from: number, cols: number, maxRows: number = PIECE_ROWS): number {
  const perRow = Math.max(1, cols);
  let rows = 1;
  let sinceWrap = 0;
  let inCsi = false;
  for (let i = from; i < data.length; i++) {
    const b = data[i];
    if (inCsi) {
      if (b >= 0x40 && b <= 0x7e) {
        inCsi = false;
        if (b === 0x62) rows += repRows(cols); // 'b': REP
      }
    } else if (b === 0x0a || b === 0x0b || b === 0x0c) rows++;
    else if (b === 0x1b) {
      const next = data[i + 1];
      if (next === 0x5b) {
        inCsi = true;
        i++;
      } else if (next === undefined || next === 0x44 || next === 0x45) rows++; // ESC D / ESC E
    } else if ((b === 0x84 || b === 0x85) && (i === from || data[i - 1] === 0xc2)) rows++;
    else if (b === 0x9b && (i === from || data[i - 1] === 0xc2)) inCsi = true;
    if (++sinceWrap >= perRow) {
      sinceWrap = 0;
      rows++;
    }
    if (rows > maxRows) return Math.max(i, from + 1);
  }
  return data.length;
}

export interface ModelSnapshotData {
  data: string;
  cols: number;
  rows: number;
  alternateScreen: boolean;
}

type Op = (next: () => void) => void;

/**
 * One session's screen model: an @xterm/headless emulator holding the screen and its newest
 * EMULATOR_SCROLLBACK rows, plus a CompactScrollback holding every scrollback row as VT text
 * (the newest of them mirror the emulator's). After every piece of output, the rows that newly
 * scrolled into the emulator's scrollback (found with a marker on a stored row and the count of
 * rows stored after it) are encoded into the compact store. Operations run one at a time in
 * arrival order.
 */
export class TerminalModel {
  private readonly term: InstanceType<typeof Terminal>;
  private readonly serializer = new SerializeAddon();
  private readonly compact: CompactScrollback;
  private readonly queue: Op[] = [];
  private emulatorScrollback: number;
  private readonly pieceRows: number;
  /** Emulator scrollback and stored rows while not shrunk. */
  private readonly fullEmulatorScrollback: number;
  private readonly fullStoredRows: number;
  private busy = false;
  private disposed = false;
  /** Marks a scrollback row stored in the compact store, `markAhead` rows before the newest stored one (normal buffer). */
  private mark: IMarker | undefined;
  private markAhead = 0;
  /** The newest `mirrored` compact rows are also the emulator's scrollback rows. */
  private mirrored = 0;
  /** A resize changed the emulator's scrollback rows (reflow) and they are not stored again yet. */
  private reflowed = false;
  /** Rows that scrolled out of the emulator before they could be stored (never expected). */
  lostRows = 0;
  /** Markers placed on stored rows so far (for tests and stats). */
  markersPlaced = 0;

  constructor(cols: number, rows: number, scrollbackRows: number) {
    // A scrollback the emulator can hold cheaply stays in it: nothing is stored, writes are not cut.
    const compacting = scrollbackRows > EMULATOR_SCROLLBACK;
    this.emulatorScrollback = compacting ? EMULATOR_SCROLLBACK : scrollbackRows;
    this.pieceRows = compacting ? PIECE_ROWS : Number.MAX_SAFE_INTEGER;
    this.term = new Terminal({ cols, rows, scrollback: this.emulatorScrollback, allowProposedApi: true });
    this.term.loadAddon(this.serializer);
    checkXtermShape(this.term);
    this.compact = new CompactScrollback(compacting ? scrollbackRows : 0);
    this.fullEmulatorScrollback = this.emulatorScrollback;
    this.fullStoredRows = this.compact.capacity;
    // An application's own "clear scrollback" (ED 3) or full reset clears the stored rows too.
    this.term.parser.registerCsiHandler({ final: 'J' }, (params) => {
      if (params[0] === 3 && this.term.buffer.active.type === 'normal') this.forgetStored();
      return false;
    });
    this.term.parser.registerEscHandler({ final: 'c' }, () => {
      this.forgetStored();
      return false;
    });
  }

  /** Parses `data`; `done` runs once all of it is in the model. */
  write(data: Uint8Array, done: () => void): void {
    this.enqueue((next) =>
      this.writeFrom(data, 0, () => {
        done();
        next();
      }),
    );
  }

  resize(cols: number, rows: number): void {
    this.enqueue((next) => {
      // Room for a reflow to rewrap the scrollback without the emulator dropping any of it;
      // the rows are stored again from the reflowed emulator, then the room is given back.
      if (this.compact.capacity > 0) {
        const widen = Math.max(1, Math.ceil(this.term.cols / cols));
        this.term.options.scrollback = this.emulatorScrollback * widen + this.term.rows + rows;
      }
      this.term.resize(cols, rows);
      this.reflowed = true;
      this.captureScrolled();
      next();
    });
  }

  clear(): void {
    this.enqueue((next) => {
      this.forgetStored();
      this.term.clear();
      next();
    });
  }

  /**
   * Drops every scrollback row, the emulator's and the stored ones, and keeps none until
   * {@link unshrink}: the screen, modes and cursor stay exact (a background or idle session whose
   * bytes are in its log; docs/flow-control.md, "Model scrollback").
   */
  shrink(): void {
    this.enqueue((next) => {
      this.forgetStored();
      this.compact.setMaxRows(0);
      this.emulatorScrollback = 0;
      // Lowering the option trims the emulator's buffer to the screen (its rows are released).
      this.term.options.scrollback = 0;
      next();
    });
  }

  /** Keeps scrollback again from here on (what scrolled meanwhile stays lost). */
  unshrink(): void {
    this.enqueue((next) => {
      this.compact.setMaxRows(this.fullStoredRows);
      this.emulatorScrollback = this.fullEmulatorScrollback;
      this.term.options.scrollback = this.emulatorScrollback;
      next();
    });
  }

  /** Scrollback rows the emulator holds now (for tests and stats). */
  get emulatorRows(): number {
    return this.term.buffer.normal.length - this.term.rows;
  }

  /** VT text that redraws the screen, the newest `scrollbackRows` rows above it (all by default) and the cursor. */
  snapshot(scrollbackRows: number | undefined, done: (s: ModelSnapshotData) => void): void {
    this.enqueue((next) => {
      done({
        data: this.render(
          scrollbackRows === undefined ? Number.POSITIVE_INFINITY : Math.max(0, scrollbackRows),
        ),
        cols: this.term.cols,
        rows: this.term.rows,
        alternateScreen: this.term.buffer.active.type === 'alternate',
      });
      next();
    });
  }

  /** The retained text as plain logical lines (soft-wrapped rows joined), oldest first. */
  plainLines(done: (lines: string[]) => void): void {
    this.enqueue((next) => {
      const older = this.compact.rows - this.mirrored;
      done(modelPlainLines(older > 0 ? this.compact.render(older, this.mirrored) : '', this.term));
      next();
    });
  }

  /** Disposes once every operation queued so far has run (their callbacks are called). */
  /**
   * From now on the model answers the queries in what it parses (the session writes `reply` to
   * the PTY): the emulator's own answers (DA1, DA2, DSR, CPR, DECRQM, DECRQSS), the size in
   * characters (CSI 18 t), and what @xterm/headless does not answer itself: XTVERSION and the
   * colours of OSC 10/11/12 from `palette`. Pixel sizes (CSI 14/16 t) and the kitty keyboard
   * flags (CSI ? u) stay unanswered: a program then falls back. Only the live model answers: a
   * model being rebuilt from the log must not answer old queries again.
   */
  answerQueries(reply: (data: string) => void, palette: TerminalPalette): void {
    this.term.options.windowOptions = { getWinSizeChars: true };
    this.term.onData(reply);
    this.term.parser.registerCsiHandler({ prefix: '>', final: 'q' }, (params) => {
      if ((params[0] ?? 0) === 0) reply(XTVERSION_REPLY);
      return true;
    });
    const colours: Array<[number, string]> = [
      [10, palette.foreground],
      [11, palette.background],
      [12, palette.cursor],
    ];
    for (const [ps, colour] of colours) {
      this.term.parser.registerOscHandler(ps, (data) => {
        if (data !== '?') return false;
        reply(`\x1b]${ps};${xtermRgb(colour)}\x1b\\`);
        return true;
      });
    }
  }

  /** Disposes the model once its queued work is done; then `closed` runs. */
  close(closed?: () => void): void {
    this.enqueue((next) => {
      this.dispose();
      closed?.();
      next();
    });
  }

  dispose(): void {
    this.disposed = true;
    this.queue.length = 0;
    this.term.dispose();
  }

  /** Scrollback rows held as compact text (for tests and stats). */
  get storedRows(): number {
    return this.compact.rows;
  }

  private enqueue(op: Op): void {
    if (this.disposed) return;
    this.queue.push(op);
    if (!this.busy) this.runNext();
  }

  private runNext(): void {
    for (;;) {
      const op = this.queue.shift();
      if (!op || this.disposed) {
        this.busy = false;
        return;
      }
      this.busy = true;
      // Operations that finish synchronously continue this loop instead of recursing.
      let sync = true;
      let finished = false;
      op(() => {
        finished = true;
        if (!sync) this.runNext();
      });
      sync = false;
      if (!finished) return;
    }
  }

  private writeFrom(data: Uint8Array, from: number, finish: () => void): void {
    if (this.disposed) return;
    const cut = pieceEnd(data, from, this.term.cols, this.pieceRows);
    this.term.write(data.subarray(from, cut), () => {
      this.captureScrolled();
      if (cut < data.length) this.writeFrom(data, cut, finish);
      else finish();
    });
  }

  private scratch = new Uint8Array(0);

  private scratchFor(cols: number): Uint8Array {
    if (this.scratch.length < cols) this.scratch = new Uint8Array(cols);
    return this.scratch;
  }

  private forgetStored(): void {
    this.compact.clear();
    this.mark?.dispose();
    this.mark = undefined;
    this.markAhead = 0;
    this.mirrored = 0;
  }

  /**
   * Stores the scrollback rows that are not stored yet. Only while the normal buffer is active:
   * markers live in the active buffer, and the normal one does not scroll behind the alternate
   * screen (a resize meanwhile is caught up when it comes back).
   */
  private captureScrolled(): void {
    if (this.disposed || this.term.buffer.active.type !== 'normal' || this.compact.capacity === 0) return;
    const normal = this.term.buffer.normal;
    let from = 0;
    if (this.reflowed) {
      // The mirrored rows were rewrapped: store the emulator's scrollback afresh.
      this.compact.dropNewest(this.mirrored);
      this.mark?.dispose();
      this.mark = undefined;
      this.reflowed = false;
    } else if (this.mark) {
      if (this.mark.isDisposed) this.lostRows++;
      else from = this.mark.line + 1 + this.markAhead;
    }
    const base = normal.baseY;
    if (from < base) {
      const cell = normal.getNullCell();
      const scratch = this.scratchFor(this.term.cols);
      for (let y = from; y < base; y++) {
        const line = normal.getLine(y);
        if (!line) continue;
        const plain = plainAsciiRow(line, scratch);
        if (plain >= 0) this.compact.pushBytes(scratch, plain, line.isWrapped, plain === line.length);
        else this.compact.push(encodeRow(line, cell), line.isWrapped, rowIsFull(line, cell));
      }
    }
    if (this.term.options.scrollback !== this.emulatorScrollback)
      this.term.options.scrollback = this.emulatorScrollback;
    const kept = normal.baseY;
    this.mirrored = Math.min(kept, this.compact.rows);
    // The newest stored row is kept - 1 now: the marker stays while it lags that by MARK_LAG_ROWS at most.
    const ahead = this.mark && !this.mark.isDisposed ? kept - 1 - this.mark.line : -1;
    if (ahead >= 0 && ahead <= MARK_LAG_ROWS) {
      this.markAhead = ahead;
      return;
    }
    this.mark?.dispose();
    this.markAhead = 0;
    // registerMarker counts from the cursor row; the newest scrollback row is kept - 1.
    this.mark = kept > 0 ? this.term.registerMarker(kept - 1 - (normal.baseY + normal.cursorY)) : undefined;
    if (this.mark) this.markersPlaced++;
  }

  private render(limit: number): string {
    const normal = this.term.buffer.normal;
    const ownRows = Math.min(normal.baseY, limit);
    const older = this.compact.rows - this.mirrored;
    const compactRows = Math.min(older, limit - ownRows);
    const screen = this.serializer.serialize({ scrollback: ownRows });
    if (compactRows === 0) return screen;
    const history = this.compact.render(compactRows, this.mirrored);
    if (ownRows > 0) {
      const first = normal.getLine(normal.baseY - ownRows);
      const joins = first?.isWrapped && ownRows === normal.baseY && this.compact.isFull(this.mirrored);
      return history + (joins ? '' : '\r\n') + screen;
    }
    // The screen serializes relative to its top-left corner: push every history row off the
    // screen into the receiver's scrollback, then draw the screen from home.
    return `${history}${'\r\n'.repeat(this.term.rows)}\x1b[H${screen}`;
  }
}
