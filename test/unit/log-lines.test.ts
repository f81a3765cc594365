import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { lineRange } from '../../agent-stub/history/command-records.js';
import { LINE_MARK_EVERY, LINE_MARK_MIN_BYTES, LineIndex } from '../../agent-stub/history/line-index.js';
import { readLogLines } from '../../agent-stub/history/log-lines.js';
import { vtToPlainText } from '../../agent-stub/history/plain-text.js';
import { SessionLog, type SessionLogOwner } from '../../agent-stub/history/session-log.js';

const root = mkdtempSync(join(tmpdir(), 'ptr-loglines-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

const owner: SessionLogOwner = { resized: () => {}, rolled: () => {}, failed: () => {} };

/** What a page from `from` must hold: the log's bytes split at LF, whole lines from the first one held. */
function expected(all: Buffer, start: number, from: number, count: number) {
  const raw: Buffer[] = [];
  let at = 0;
  for (let i = all.indexOf(10); i >= 0; i = all.indexOf(10, at)) {
    raw.push(all.subarray(at, i));
    at = i + 1;
  }
  if (at < all.length) raw.push(all.subarray(at));
  let lineAtStart = 0;
  for (let i = 0; i < start; i++) if (all[i] === 10) lineAtStart++;
  const firstLine = start === 0 || all[start - 1] === 10 ? lineAtStart : lineAtStart + 1;
  const begin = Math.min(Math.max(from, firstLine), raw.length);
  return {
    firstLine: Math.min(firstLine, raw.length),
    begin,
    total: raw.length,
    lines: raw.slice(begin, begin + count).map((b) => vtToPlainText(b)),
  };
}

const textChunk = fc
  .array(
    fc.oneof(
      fc.constantFrom('\n', '\r\n', '\x1b[31m', '\x1b[0m', '\r', 'ü', '→'),
      fc.string({ unit: fc.constantFrom('a', 'b', ' ', '1'), minLength: 1, maxLength: 300 }),
    ),
    { minLength: 1, maxLength: 60 },
  )
  .map((parts) => Buffer.from(parts.join('')));

describe('line index and log pages', () => {
  it('pages match the log split at LF, queued or written, after dropped segments (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(textChunk, fc.boolean()), { minLength: 1, maxLength: 40 }),
        fc.array(fc.tuple(fc.nat(2000), fc.integer({ min: 1, max: 400 })), { minLength: 1, maxLength: 6 }),
        async (chunks, reads) => {
          const dir = join(root, `l${n++}`);
          mkdirSync(dir);
          const log = new SessionLog(dir, 0, { segmentBytes: 2048, sessionBytes: 8192 }, owner);
          for (const [c, flush] of chunks) {
            log.append(c);
            if (flush) await log.flushed();
          }
          const all = Buffer.concat(chunks.map(([c]) => c));
          const held = all.subarray(log.start);
          const readBack = await log.read(log.start, log.head);
          expect(readBack?.equals(held)).toBe(true);
          for (const [from, count] of reads) {
            const page = await readLogLines(log, from, count, 1 << 20);
            const want = expected(all, log.start, from, count);
            expect(page).toBeDefined();
            expect(page?.historyStartLine).toBe(want.firstLine);
            expect(page?.totalLines).toBe(want.total);
            expect(page?.lineBegin).toBe(want.begin);
            expect(page?.lines).toEqual(want.lines);
          }
          log.destroy();
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a page limited to a byte range (a command) holds exactly that range, split at LF (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(textChunk, { minLength: 1, maxLength: 20 }),
        fc.nat(),
        fc.nat(),
        fc.integer({ min: 1, max: 50 }),
        async (chunks, a, b, count) => {
          const dir = join(root, `l${n++}`);
          mkdirSync(dir);
          const log = new SessionLog(dir, 0, { segmentBytes: 2048, sessionBytes: 1 << 20 }, owner);
          for (const c of chunks) log.append(c);
          const all = Buffer.concat(chunks);
          const [fromSeq, toSeq] = [a % (all.length + 1), b % (all.length + 1)].sort((x, y) => x - y);
          const posAt = (seq: number) => ({
            line: all.subarray(0, seq).filter((x) => x === 10).length,
            atLineStart: seq === 0 || all[seq - 1] === 10,
          });
          const [lineBegin, lineEnd] = lineRange(posAt(fromSeq), posAt(toSeq), fromSeq === toSeq);
          const range = { fromSeq, toSeq, lineBegin, lineEnd };
          // The range's bytes split at LF; a last empty piece (the range ends with LF) is no line.
          const pieces = all.subarray(fromSeq, toSeq).toString('latin1').split('\n');
          if (pieces[pieces.length - 1] === '') pieces.pop();
          const want = pieces.map((p) => vtToPlainText(Buffer.from(p, 'latin1')));
          expect(want.length).toBe(lineEnd - lineBegin);
          const got: string[] = [];
          let from = 0;
          for (let guard = 0; guard < 1000; guard++) {
            const page = await readLogLines(log, from, count, 1 << 20, range);
            expect(page?.lineBegin).toBe(Math.min(Math.max(from, lineBegin), lineEnd));
            got.push(...(page?.lines ?? []));
            if (!page || page.lineEnd >= lineEnd || page.lines.length === 0) break;
            from = page.lineEnd;
          }
          expect(got).toEqual(want);
          log.destroy();
        },
      ),
      { numRuns: 80, seed: 54_002 },
    );
  });

  it('a page cut by the byte bound keeps its oldest lines and continues at lineEnd', async () => {
    const dir = join(root, `l${n++}`);
    mkdirSync(dir);
    const log = new SessionLog(dir, 0, { segmentBytes: 1 << 20, sessionBytes: 4 << 20 }, owner);
    const lines = Array.from({ length: 3 * LINE_MARK_EVERY + 7 }, (_, i) => `line-${i}`);
    log.append(Buffer.from(`${lines.join('\n')}\n`));
    const got: string[] = [];
    let from = 0;
    for (;;) {
      const p = await readLogLines(log, from, 10_000, 100);
      expect(p?.lineBegin).toBe(from);
      got.push(...(p?.lines ?? []));
      if (!p || p.lineEnd >= p.totalLines) break;
      expect(p.truncated).toBe(true);
      from = p.lineEnd;
    }
    expect(got).toEqual(lines);
    log.destroy();
  });

  it('marks a line start every LINE_MARK_EVERY lines and LINE_MARK_MIN_BYTES bytes, and forgets marks before a drop', () => {
    const idx = new LineIndex(0);
    // Long lines: the line count decides.
    const line = `${'y'.repeat(LINE_MARK_MIN_BYTES / LINE_MARK_EVERY + 9)}\n`;
    const text = Buffer.from(line.repeat(3 * LINE_MARK_EVERY));
    idx.scan(0, text.subarray(0, 5));
    idx.scan(0, text); // the first 5 bytes are skipped, not counted twice
    expect(idx.lfCount).toBe(3 * LINE_MARK_EVERY);
    expect(idx.markAtOrBefore(LINE_MARK_EVERY + 3)).toEqual({
      line: LINE_MARK_EVERY,
      seq: LINE_MARK_EVERY * line.length,
    });
    idx.dropBefore(2 * LINE_MARK_EVERY * line.length + 1);
    expect(idx.markAtOrBefore(LINE_MARK_EVERY + 3)).toBeUndefined();
    expect(() => idx.scan(text.length + 1, Buffer.from('a'))).toThrow(RangeError);
  });

  it('marks short lines by bytes, so the marks of a log are bounded by its size', () => {
    const idx = new LineIndex(0);
    const perMark = LINE_MARK_MIN_BYTES / 2;
    idx.scan(0, Buffer.from('x\n'.repeat(4 * perMark)));
    expect(idx.lfCount).toBe(4 * perMark);
    // 2-byte lines: a mark every LINE_MARK_MIN_BYTES bytes, not every LINE_MARK_EVERY lines.
    expect(idx.markAtOrBefore(perMark - 1)).toEqual({ line: 0, seq: 0 });
    expect(idx.markAtOrBefore(3 * perMark + 5)).toEqual({ line: 3 * perMark, seq: 3 * LINE_MARK_MIN_BYTES });
    // A drop keeps counting from the newest mark, not from the first one left.
    idx.dropBefore(4 * LINE_MARK_MIN_BYTES);
    idx.scan(4 * LINE_MARK_MIN_BYTES, Buffer.from('x\n'.repeat(perMark)));
    expect(idx.markAtOrBefore(5 * perMark)).toEqual({ line: 5 * perMark, seq: 5 * LINE_MARK_MIN_BYTES });
  });
});
