import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { vtToPlainText } from '../../agent-stub/history/plain-text.js';
import { renderSendOutput } from '../../agent-stub/readiness/send-output.js';

const line = fc.string({ unit: fc.constantFrom('a', 'b', ' ', 'é', '\x1b[1m', '\r'), maxLength: 40 });

describe('renderSendOutput', () => {
  it('keeps the newest whole lines that fit and names the log lines it left out (property)', () => {
    fc.assert(
      fc.property(
        fc.array(line, { minLength: 1, maxLength: 60 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 400 }),
        fc.nat(1000),
        (lines, endsWithLf, maxBytes, startLine) => {
          const raw = Buffer.from(lines.join('\r\n') + (endsWithLf ? '\r\n' : ''));
          // As the log counts them: an empty piece after the last line break is no line.
          const pieces = raw.toString('utf8').split('\n');
          const headLine = startLine + pieces.length - 1;
          if (pieces[pieces.length - 1] === '') pieces.pop();
          const r = renderSendOutput(raw, false, maxBytes, { startLine, headLine });
          const rendered = pieces.map((l) => vtToPlainText(l));
          expect(Buffer.byteLength(r.output)).toBeLessThanOrEqual(maxBytes);
          if (!r.truncated) {
            expect(r.output).toBe(rendered.join('\n'));
            expect(r.omittedFromLine).toBeUndefined();
            return;
          }
          expect(r.omittedFromLine).toBe(startLine);
          const omitted = r.omittedLines as number;
          const shown = rendered.slice(omitted);
          if (omitted < rendered.length) {
            // Whole lines: exactly the ones after the omitted range.
            expect(r.output).toBe(shown.join('\n'));
          } else {
            // The newest line alone is longer than the bound: its last bytes, and it counts as left out.
            expect(omitted).toBe(rendered.length);
            expect(rendered[rendered.length - 1]!.endsWith(r.output)).toBe(true);
          }
        },
      ),
      { seed: 54_004, numRuns: 500 },
    );
  });

  it('a window that begins inside the output drops its partial first line and still counts it', () => {
    const r = renderSendOutput(Buffer.from('tial\r\nrow-2\r\nrow-3\r\n$ '), true, 1000, {
      startLine: 10,
      headLine: 53,
    });
    // Lines: 50 "…tial" (partial, dropped), 51 row-2, 52 row-3, 53 "$".
    expect(r).toEqual({ output: 'row-2\nrow-3\n$', truncated: true, omittedFromLine: 10, omittedLines: 41 });
    expect(renderSendOutput(Buffer.from('one long line'), true, 5, { startLine: 2, headLine: 7 })).toEqual({
      output: ' line',
      truncated: true,
      omittedFromLine: 2,
      omittedLines: 6,
    });
    // Without a log: no line numbers.
    expect(renderSendOutput(Buffer.from('a\nb\nc'), false, 3)).toEqual({ output: 'b\nc', truncated: true });
  });
});
