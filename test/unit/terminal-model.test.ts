import { SerializeAddon } from '@xterm/addon-serialize';
import xtermHeadless from '@xterm/headless';
import { describe, expect, it } from 'vitest';
import { sgrOf } from '../../agent-stub/session/row-encoder.js';
import {
  MARK_LAG_ROWS,
  PIECE_ROWS,
  pieceEnd,
  TerminalModel,
} from '../../agent-stub/session/terminal-model.js';

const { Terminal } = xtermHeadless;
type Term = InstanceType<typeof Terminal>;

const enc = (s: string) => Buffer.from(s, 'utf8');
const write = (t: Term, s: string) => new Promise<void>((r) => t.write(s, r));

/** Feeds the model and a full emulator (the reference) the same chunks and resizes. */
class Pair {
  readonly model: TerminalModel;
  readonly ref: Term;
  constructor(
    cols: number,
    rows: number,
    readonly scrollback = 10_000,
  ) {
    this.model = new TerminalModel(cols, rows, scrollback);
    this.ref = new Terminal({ cols, rows, scrollback, allowProposedApi: true });
  }
  async feed(s: string): Promise<void> {
    await Promise.all([new Promise<void>((r) => this.model.write(enc(s), r)), write(this.ref, s)]);
  }
  async resize(cols: number, rows: number): Promise<void> {
    this.model.resize(cols, rows);
    await write(this.ref, '');
    this.ref.resize(cols, rows);
  }
  snapshot(rows?: number) {
    return new Promise<{ data: string; cols: number; rows: number; alternateScreen: boolean }>((r) =>
      this.model.snapshot(rows, r),
    );
  }
}

/**
 * What a viewer sees: every row's text and attributes (normal and active buffer) and the cursor.
 * Blank cells (empty or a space) compare by what shows: their background, not fg or underline.
 */
function view(t: Term, lastRows = Number.POSITIVE_INFINITY) {
  const cell = t.buffer.normal.getNullCell();
  const rowsOf = (b: typeof t.buffer.normal) => {
    const out: string[] = [];
    for (let y = Math.max(0, b.length - lastRows); y < b.length; y++) {
      const line = b.getLine(y)!;
      let attrs = '';
      for (let x = 0; x < line.length; x++) {
        line.getCell(x, cell);
        if (cell.getChars().trim() !== '') attrs += `${x}:${sgrOf(cell)}|`;
        else if (!cell.isBgDefault() || cell.isInverse())
          attrs += `${x}:bg ${cell.isBgRGB() ? 'rgb' : 'palette'} ${cell.getBgColor()} ${cell.isInverse()}|`;
      }
      out.push(`${line.translateToString(true)} ${attrs}`);
    }
    return out;
  };
  return {
    normal: rowsOf(t.buffer.normal),
    active: t.buffer.active.type,
    screen: t.buffer.active.type === 'alternate' ? rowsOf(t.buffer.alternate) : [],
    cursor: [t.buffer.active.cursorX, t.buffer.active.cursorY],
  };
}

async function replay(s: { data: string; cols: number; rows: number }): Promise<Term> {
  const t = new Terminal({ cols: s.cols, rows: s.rows, scrollback: 100_000, allowProposedApi: true });
  await write(t, s.data);
  return t;
}

async function expectSameView(p: Pair, scrollbackRows?: number) {
  const snap = await p.snapshot(scrollbackRows);
  const got = await replay(snap);
  const limit = scrollbackRows === undefined ? Number.POSITIVE_INFINITY : scrollbackRows + p.ref.rows;
  expect(view(got, limit)).toEqual(view(p.ref, limit));
  return snap;
}

const lines = (from: number, to: number, f: (i: number) => string = (i) => `line ${i}`) => {
  let s = '';
  for (let i = from; i <= to; i++) s += `${f(i)}\r\n`;
  return s;
};

describe('pieceEnd', () => {
  it('bounds the rows a piece can add', () => {
    const data = enc(lines(1, 1000));
    let from = 0;
    let pieces = 0;
    while (from < data.length) {
      const end = pieceEnd(data, from, 80);
      const newlines = data.subarray(from, end).filter((b) => b === 0x0a).length;
      expect(newlines + Math.ceil((end - from) / 80)).toBeLessThanOrEqual(PIECE_ROWS);
      from = end;
      pieces++;
    }
    expect(pieces).toBeGreaterThan(5);
  });
  it('counts escapes and long runs as possible rows and always makes progress', () => {
    expect(pieceEnd(enc('\x1bD'.repeat(500)), 0, 80, 10)).toBe(18);
    // Colour changes cannot scroll; a REP can print a whole screenful of rows.
    expect(pieceEnd(enc('\x1b[31mx\x1b[0m'.repeat(10)), 0, 80, 10)).toBe(100);
    expect(pieceEnd(enc('ab\x1b[65535bcd'), 0, 80, 10)).toBeLessThan(12);
    expect(pieceEnd(enc('x'.repeat(500)), 0, 10, 3)).toBe(29);
    expect(pieceEnd(enc('\n\n\n'), 0, 80, 0)).toBe(1);
  });
});

describe('TerminalModel', () => {
  it('keeps scrolled rows outside the emulator and redraws exactly what a full emulator shows', async () => {
    const p = new Pair(80, 24);
    await p.feed(lines(1, 3000));
    await p.feed('$ prompt');
    expect(p.model.storedRows).toBe(3000 + 1 - 24);
    await expectSameView(p);
  });

  it('keeps colours, attributes, wide and combining characters across the compact store', async () => {
    const p = new Pair(40, 10);
    const f = (i: number) =>
      `\x1b[3${i % 8};1m${i}\x1b[0m \x1b[48;5;${i % 256}m中文\x1b[49m e\u0301 \x1b[38;2;1;2;3;4;7mrgb\x1b[0m \x1b[41m\x1b[K`;
    await p.feed(lines(1, 600, f));
    await p.feed('\x1b[1;33mtail');
    await expectSameView(p);
  });

  it('joins soft-wrapped rows across capture boundaries', async () => {
    const p = new Pair(30, 8);
    const f = (i: number) => `${i}:${'abcdefghij'.repeat(1 + (i % 7))}`;
    await p.feed(lines(1, 800, f));
    // One logical line far longer than a piece.
    await p.feed(`${'W'.repeat(30 * 300)}\r\nend`);
    await expectSameView(p);
  });

  it('forgets the compact rows when the application clears the scrollback or resets', async () => {
    const p = new Pair(80, 24);
    await p.feed(lines(1, 1000));
    await p.feed('\x1b[H\x1b[2J\x1b[3J');
    expect(p.model.storedRows).toBe(0);
    await p.feed(lines(2000, 2500));
    await expectSameView(p);
    await p.feed('\x1bc');
    expect(p.model.storedRows).toBe(0);
    await p.feed(lines(3000, 3010));
    await expectSameView(p);
  });

  it('redraws the alternate screen over the compact history', async () => {
    const p = new Pair(80, 24);
    await p.feed(lines(1, 700));
    await p.feed('\x1b[?1049h\x1b[H\x1b[2Jfull screen app\r\nrow 2');
    const snap = await expectSameView(p);
    expect(snap.alternateScreen).toBe(true);
    await p.feed('\x1b[?1049l');
    await p.feed(lines(701, 720));
    await expectSameView(p);
  });

  it('follows resizes, including rows pushed into the scrollback by a shorter screen', async () => {
    const p = new Pair(80, 40);
    await p.feed(lines(1, 500));
    await p.resize(80, 10);
    await p.feed(lines(501, 520));
    await p.resize(100, 30);
    await p.feed(lines(521, 530));
    await expectSameView(p);
  });

  it('moves its marker on the stored rows once per MARK_LAG_ROWS rows, not once per write', async () => {
    // A flood of one-row writes (what `yes` looks like to the model) used to place a new marker
    // after every write: listeners and objects that lived past the young generation and made
    // most of the model worker's garbage.
    const p = new Pair(80, 24);
    for (let i = 1; i <= 1000; i++) await p.feed(`row ${i}\r\n`);
    expect(p.model.markersPlaced).toBeLessThanOrEqual(Math.ceil(1000 / MARK_LAG_ROWS) + 2);
    expect(p.model.lostRows).toBe(0);
    await expectSameView(p);
    // Writes of every size after it (one row, a piece and more, many pieces) keep every row.
    for (const n of [1, 7, PIECE_ROWS, PIECE_ROWS + 5, 3 * PIECE_ROWS + 1, 1, 2, MARK_LAG_ROWS])
      await p.feed(lines(1, n, (i) => `n${n} ${i}`));
    expect(p.model.lostRows).toBe(0);
    await expectSameView(p);
  });

  it('keeps a small scrollback in the emulator alone', async () => {
    const p = new Pair(80, 24, 100);
    await p.feed(lines(1, 2000));
    await p.resize(60, 20);
    await p.feed(lines(2001, 2100));
    expect(p.model.storedRows).toBe(0);
    await expectSameView(p);
  });

  it('limits a snapshot to the requested scrollback rows and retains only its configured rows', async () => {
    const p = new Pair(80, 24, 1000);
    await p.feed(lines(1, 5000));
    expect(p.model.storedRows).toBe(1000);
    await expectSameView(p);
    await expectSameView(p, 100);
    await expectSameView(p, 0);
  });

  /**
   * Random output hits corners where even a full emulator's own serialization is not exact (a
   * cursor parked in the pending-wrap column, the serializer's forced-wrap filler, some alternate
   * screen states). The property here: compacting changes nothing, the snapshot shows exactly
   * what serializing a full emulator (what the stub did before) shows.
   */
  it.each([7, 1, 3, 9, 1234])(
    'shows what a full emulator serializes, on random output (seed %i)',
    async (first) => {
      let seed = first;
      const rnd = (n: number) => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        return seed % n;
      };
      const tokens = [
        () => 'word ',
        () => '\r\n',
        () => '\n',
        () => '\r',
        () => `\x1b[${rnd(8) + 30}m`,
        () => '\x1b[0m',
        () => '\x1b[1;4m',
        () => '宽字',
        () => 'x'.repeat(rnd(120)),
        () => '\x1b[K',
        () => `\x1b[${rnd(24) + 1};${rnd(80) + 1}H`,
        () => '\x1b[2J',
        () => '\x1b[A',
        () => '\t',
        () => '\x1bD',
        () => (rnd(20) === 0 ? '\x1b[?1049h' : ''),
        () => (rnd(4) === 0 ? '\x1b[?1049l' : ''),
        () => (rnd(30) === 0 ? '\x1b[3J' : ''),
        () => '\x1b[38;5;200;48;2;9;8;7m',
      ];
      for (let round = 0; round < 8; round++) {
        const p = new Pair(50 + rnd(40), 10 + rnd(20));
        for (let chunk = 0; chunk < 40; chunk++) {
          let s = '';
          for (let i = 0; i < 200; i++) s += tokens[rnd(tokens.length)]();
          await p.feed(s);
          if (rnd(10) === 0) await p.resize(40 + rnd(60), 8 + rnd(30));
        }
        const serializer = new SerializeAddon();
        p.ref.loadAddon(serializer);
        const before = await replay({ data: serializer.serialize(), cols: p.ref.cols, rows: p.ref.rows });
        expect(view(await replay(await p.snapshot()))).toEqual(view(before));
      }
    },
  );
});
