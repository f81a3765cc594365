import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import xtermHeadless from '@xterm/headless';
import { describe, expect, it } from 'vitest';
import {
  CELL_WORDS,
  CODEPOINT_MASK,
  checkXtermShape,
  plainAsciiRow,
  rowWords,
  widthOf,
  XTERM_HEADLESS_PINNED,
} from '../../agent-stub/adapters/xterm-headless.js';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};
const installed = (
  JSON.parse(readFileSync(join(ROOT, 'node_modules', '@xterm', 'headless', 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

const write = (t: xtermHeadless.Terminal, s: string) => new Promise<void>((r) => t.write(s, r));

/**
 * The contract of agent-stub/adapters/xterm-headless.ts: the installed @xterm/headless is the
 * pinned one and its rows still hold the cell words the adapter reads, matching the public API.
 */
describe('@xterm/headless adapter', () => {
  it('is pinned exactly, and the installed package is that version', () => {
    expect(pkg.dependencies['@xterm/headless']).toBe(XTERM_HEADLESS_PINNED);
    expect(installed).toBe(XTERM_HEADLESS_PINNED);
  });

  it('reads the cell words the public API reports: code points, widths, plain rows', async () => {
    const t = new xtermHeadless.Terminal({ cols: 20, rows: 4, allowProposedApi: true });
    expect(checkXtermShape(t)).toBeUndefined();
    await write(t, 'abc 世x\r\n\x1b[31mred\x1b[0m');
    const row0 = t.buffer.active.getLine(0)!;
    const words = rowWords(row0)!;
    expect(words).toBeInstanceOf(Uint32Array);
    for (let col = 0; col < 7; col++) {
      const cell = row0.getCell(col)!;
      expect(words[col * CELL_WORDS]! & CODEPOINT_MASK).toBe(cell.getChars() ? cell.getCode() : 0);
      expect(widthOf(words[col * CELL_WORDS]!)).toBe(cell.getWidth());
    }
    // A wide character: one cell of width 2, then one of width 0.
    expect(widthOf(words[4 * CELL_WORDS]!)).toBe(2);
    expect(widthOf(words[5 * CELL_WORDS]!)).toBe(0);
    // The plain-row path: ASCII with default attributes only.
    const out = new Uint8Array(20);
    const plain = new xtermHeadless.Terminal({ cols: 20, rows: 2, allowProposedApi: true });
    await write(plain, 'hello world');
    const n = plainAsciiRow(plain.buffer.active.getLine(0)!, out);
    expect(Buffer.from(out.subarray(0, n)).toString()).toBe('hello world');
    // Colour: not plain.
    expect(plainAsciiRow(t.buffer.active.getLine(1)!, out)).toBe(-1);
    t.dispose();
    plain.dispose();
  });
});
