import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OutputRing } from '../../agent-stub/history/output-ring.js';
import { utf8Tail, vtToPlainText } from '../../agent-stub/history/plain-text.js';
import { sendOutput } from '../../agent-stub/readiness/send-output.js';
import { storedRowText } from '../../agent-stub/session/model-text.js';
import { pageLines } from '../../agent-stub/session/read-page.js';
import { typedText } from '../../relay/agents/typed-text.js';

describe('vtToPlainText', () => {
  it('keeps text and line breaks, drops colours, OSC titles and other escapes', () => {
    const raw = 'a\x1b[1;31mred\x1b[0m b\r\n\x1b]0;title\x07next\x1b]2;t2\x1b\\ line\x1b(B\r\n';
    expect(vtToPlainText(Buffer.from(raw))).toBe('ared b\nnext line');
  });

  it('CR rewrites the line (a progress bar keeps its last state), BS and erase-in-line apply', () => {
    // A final line break ends the last line; it adds no empty line.
    expect(vtToPlainText('10%\r50%\r100%\n')).toBe('100%');
    expect(vtToPlainText('abc\b\bX\nnext')).toBe('aXc\nnext');
    expect(vtToPlainText('long line\r\x1b[Kshort')).toBe('short');
    expect(vtToPlainText('ab\x1b[3Ccd')).toBe('ab   cd');
    expect(vtToPlainText('a\tb\n\nc')).toBe('a       b\n\nc');
  });

  it('keeps multi-byte characters whole and the unterminated last line (a prompt)', () => {
    expect(vtToPlainText(Buffer.from('é漢字🙂\nuser@host:~$ '))).toBe('é漢字🙂\nuser@host:~$');
  });
});

describe('utf8Tail', () => {
  it('never splits a character and never exceeds the bound', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 200 }),
        fc.integer({ min: 1, max: 300 }),
        (s, max) => {
          const { text, truncated } = utf8Tail(s, max);
          expect(Buffer.byteLength(text)).toBeLessThanOrEqual(
            Math.max(max, truncated ? 0 : Buffer.byteLength(s)),
          );
          expect(s.endsWith(text)).toBe(true);
          // Its bytes are the input's last bytes: no character was cut (a cut one would decode to
          // U+FFFD, which the input may hold itself, so its text alone cannot tell).
          const bytes = Buffer.from(s);
          const out = Buffer.from(text);
          expect(bytes.subarray(bytes.length - out.length).equals(out)).toBe(true);
          expect(truncated).toBe(Buffer.byteLength(s) > max);
          // At most 3 bytes short of the bound (one partial 4-byte character skipped).
          if (truncated) expect(Buffer.byteLength(text)).toBeGreaterThanOrEqual(max - 3);
        },
      ),
      { seed: 833_891_282, numRuns: 500 },
    );
  });

  it('cuts inside a 3-byte character by moving to the next one', () => {
    expect(utf8Tail('a漢b', 3)).toEqual({ text: 'b', truncated: true });
    expect(utf8Tail('a漢b', 4)).toEqual({ text: '漢b', truncated: true });
  });
});

describe('pageLines', () => {
  const lines = Array.from({ length: 300 }, (_, i) => `line ${i}`);

  it('pages back from the newest line with half-open ranges that tile the text exactly once', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 16, max: 4096 }), (count, maxBytes) => {
        const seen: string[] = [];
        let offset = 0;
        for (let guard = 0; guard < 10_000; guard++) {
          const p = pageLines(lines, offset, count, maxBytes);
          const bytes = p.lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
          if (
            p.lineBegin !== offset ||
            p.lineEnd !== offset + p.lines.length ||
            p.totalLines !== lines.length
          )
            throw new Error(`bad range ${JSON.stringify({ offset, ...p, lines: p.lines.length })}`);
          if (p.lines.length > count || bytes > maxBytes)
            throw new Error(`page over its bounds at ${offset}`);
          seen.unshift(...p.lines);
          if (p.lineEnd >= p.totalLines) break;
          offset = p.lineEnd;
        }
        expect(seen).toEqual(lines);
      }),
      { numRuns: 60 },
    );
  });

  it('flags a page the byte bound cut, and cuts a single long line to its newest bytes', () => {
    const p = pageLines(['a', 'b', 'x'.repeat(100)], 0, 3, 50);
    expect(p).toMatchObject({ lines: ['x'.repeat(49)], lineBegin: 0, lineEnd: 1, truncated: true });
    expect(pageLines(['a', 'b'], 5, 3, 50)).toEqual({
      lines: [],
      lineBegin: 2,
      lineEnd: 2,
      totalLines: 2,
      truncated: false,
    });
  });
});

describe('sendOutput', () => {
  it('renders the output since the send as text; a long one keeps its newest part and is flagged', () => {
    const ring = new OutputRing(64 * 1024);
    ring.append(Buffer.from('before the send\r\n'));
    const start = ring.head;
    ring.append(Buffer.from('\x1b[32mok\x1b[0m\r\n$ '));
    expect(sendOutput(ring, start, 8192)).toEqual({ output: 'ok\n$', truncated: false });
    for (let i = 0; i < 5000; i++) ring.append(Buffer.from(`\x1b[32mline ${i}\x1b[0m\r\n`));
    const r = sendOutput(ring, start, 8192);
    expect(r.truncated).toBe(true);
    expect(Buffer.byteLength(r.output)).toBeLessThanOrEqual(8192);
    const lines = r.output.split('\n');
    expect(lines[lines.length - 1]).toBe('line 4999');
    for (const l of lines.slice(1)) expect(l).toMatch(/^line \d+$/);
    // The send's start left the 64 KiB ring: flagged even when the text would fit.
    expect(sendOutput(ring, start, 60 * 1024).truncated).toBe(true);
  });
});

describe('storedRowText', () => {
  it('turns the row encoder output into plain text (forward moves are spaces)', () => {
    expect(storedRowText('\x1b[0;1;31mab\x1b[3X\x1b[3Ccd\x1b[0m')).toBe('ab   cd');
  });
});

describe('typedText', () => {
  it('types newlines as Enter and adds a final Enter once; empty text types nothing', () => {
    expect(typedText('ls')).toBe('ls\r');
    expect(typedText("cat <<'EOF'\na\r\nEOF\n")).toBe("cat <<'EOF'\ra\rEOF\r");
    expect(typedText('y', false)).toBe('y');
    expect(typedText('')).toBe('');
  });
});
