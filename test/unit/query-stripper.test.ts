import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QueryStripper } from '../../provider/client/query-stripper.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const strip = (s: string) => dec(new QueryStripper().push(enc(s)));

const QUERIES = [
  '\x1b[c',
  '\x1b[0c',
  '\x1b[>c',
  '\x1b[5n',
  '\x1b[6n',
  '\x1b[?6n',
  '\x1b[?25$p',
  '\x1b[4$p',
  '\x1b[>q',
  '\x1b[?u',
  '\x1b[18t',
  '\x1b[14t',
  '\x1b]10;?\x07',
  '\x1b]11;?\x1b\\',
  '\x1b]4;1;?\x07',
  '\x1bP$qm\x1b\\',
  '\x1bP+q544e\x1b\\',
];
const KEPT = [
  'plain text',
  '\x1b[1;31mred\x1b[0m',
  '\x1b[2J\x1b[H',
  '\x1b]0;title\x07',
  '\x1b]11;#102030\x07',
  '\x1b[22t\x1b[23t',
  '\x1b[>1u',
  '\x1b[?2004h',
  '\x1bP1;2|data\x1b\\',
  '\x1b7\x1b8',
];

describe('QueryStripper', () => {
  it('takes out every query and nothing else', () => {
    for (const q of QUERIES) expect(strip(`a${q}b`), JSON.stringify(q)).toBe('ab');
    for (const k of KEPT) expect(strip(`a${k}b`), JSON.stringify(k)).toBe(`a${k}b`);
  });

  it('holds a sequence cut by a chunk end until the next chunk decides', () => {
    const s = new QueryStripper();
    expect(dec(s.push(enc('x\x1b[')))).toBe('x');
    expect(s.holding).toBe(true);
    expect(dec(s.push(enc('6ny\x1b]11')))).toBe('y');
    expect(dec(s.push(enc(';?\x07z\x1b[1')))).toBe('z');
    expect(dec(s.push(enc('mq')))).toBe('\x1b[1mq');
    expect(s.holding).toBe(false);
    s.push(enc('\x1b'));
    expect(dec(s.flush())).toBe('\x1b');
  });

  it('any split of a stream gives the stream minus its queries (property)', () => {
    const piece = fc.oneof(
      fc.constantFrom(...QUERIES),
      fc.constantFrom(...KEPT),
      fc.string({ maxLength: 8 }),
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 12 }),
        fc.array(fc.nat(200), { maxLength: 6 }),
        (pieces, cuts) => {
          const text = pieces.join('');
          const expected = pieces.filter((p) => !QUERIES.includes(p)).join('');
          // A random string next to a query may form a different sequence: only check clean joins.
          fc.pre(strip(text) === expected);
          const bytes = enc(text);
          const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const s = new QueryStripper();
          const out: Uint8Array[] = [];
          let prev = 0;
          for (const c of [...at, bytes.length]) {
            out.push(s.push(bytes.subarray(prev, c)));
            prev = c;
          }
          out.push(s.flush());
          expect(out.map(dec).join('')).toBe(expected);
        },
      ),
      { seed: 53, numRuns: 300 },
    );
  });
});
