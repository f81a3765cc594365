import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FactScanner, type FactScannerOptions } from '../../agent-stub/session/fact-scanner.js';
import { expectSame, feed, latin1, NONCE, steppingClock } from '../support/fact-scanner-helpers.js';
import { fuzzParams, TEST_TIMEOUT_MS } from './fuzz-options.js';

const ESC = 0x1b;
const BEL = 0x07;
const BACKSLASH = 0x5c;
const PREFIX_633 = Buffer.from('\x1b]633;', 'latin1');

/**
 * What the scanner promises to forward: every byte except OSC 633 sequences, which run from
 * `ESC ] 6 3 3 ;` to BEL or ST; an ESC that is not ST ends one early and is kept (it starts the
 * next sequence). A 633 still open at the end is dropped by flush().
 */
function strip633(input: Uint8Array): string {
  const out: number[] = [];
  let i = 0;
  while (i < input.length) {
    if (!PREFIX_633.equals(input.subarray(i, i + PREFIX_633.length))) {
      out.push(input[i++]!);
      continue;
    }
    let j = i + PREFIX_633.length;
    for (;;) {
      if (j >= input.length) return latin1(Uint8Array.from(out));
      if (input[j] === BEL) {
        i = j + 1;
        break;
      }
      if (input[j] === ESC) {
        if (j + 1 >= input.length) return latin1(Uint8Array.from(out));
        i = input[j + 1] === BACKSLASH ? j + 2 : j;
        break;
      }
      j++;
    }
  }
  return latin1(Uint8Array.from(out));
}

/** Pieces that build (and break) escape sequences, so random streams hit every scanner state. */
const pieceArb: fc.Arbitrary<Uint8Array> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .constantFrom(
        '\x1b',
        '\x07',
        '\x1b\\',
        ']',
        '\\',
        ';',
        '6',
        '3',
        '633;',
        '\x1b]',
        '\x1b]633;',
        '\x1b]6',
        '\x1b]63',
        '\x1b]0;',
        '\x1b]2;',
        '\x1b]7;file://h/tmp/a%20b',
        '\x1b]133;',
        'A',
        'B',
        'C',
        'D;',
        'D;1',
        'E;',
        'P;Cwd=/x',
        `;${NONCE}`,
        '\\x3b',
        '\\\\',
        '\x1bP',
        '\x1b_',
        '\x1b^',
        '\x1bX',
        '\x1b[',
        'm',
        'é',
        '✓',
      )
      .map((s) => Buffer.from(s, 'utf8')),
  },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 6 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 120 }).map((n) => Buffer.alloc(n, 0x61)) },
);
const streamArb = fc.array(pieceArb, { maxLength: 40 }).map((p) => Uint8Array.from(Buffer.concat(p)));

function chunks(input: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (input.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const p of [...points, input.length]) {
    out.push(input.slice(prev, p));
    prev = p;
  }
  return out;
}

const optsArb: fc.Arbitrary<() => FactScannerOptions> = fc
  .record({ nonce: fc.constantFrom(undefined, NONCE), maxOscBytes: fc.constantFrom(undefined, 1, 8, 64) })
  .map((o) => () => ({ ...o, now: steppingClock() }));

describe('fuzz: FactScanner', () => {
  it(
    'forwards every byte except OSC 633, whatever the bytes and wherever they are split',
    () => {
      fc.assert(
        fc.property(streamArb, fc.array(fc.nat(), { maxLength: 10 }), optsArb, (input, cuts, opts) => {
          // feed() also checks every fact offset lies within its push's data and nothing is left pending.
          const got = feed(new FactScanner(opts()), chunks(input, cuts));
          expect(latin1(got.data)).toBe(strip633(input));
        }),
        fuzzParams('fact-scanner bytes', { seed: 18_411, runs: 500, longRuns: 100_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'gives the same output and facts for one push and for any split, byte by byte included',
    () => {
      fc.assert(
        fc.property(streamArb, fc.array(fc.nat(), { maxLength: 10 }), optsArb, (input, cuts, opts) => {
          const whole = feed(new FactScanner(opts()), [input]);
          expectSame(feed(new FactScanner(opts()), chunks(input, cuts)), whole);
          expectSame(
            feed(
              new FactScanner(opts()),
              Array.from(input, (b) => Uint8Array.of(b)),
            ),
            whole,
          );
        }),
        fuzzParams('fact-scanner splits', { seed: 18_412, runs: 300, longRuns: 50_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'leaves a stream without ESC ] 6 3 3 ; byte for byte unchanged, flushing mid-stream included',
    () => {
      fc.assert(
        fc.property(
          fc.uint8Array({ maxLength: 300 }),
          fc.array(fc.nat(), { maxLength: 6 }),
          (input, cuts) => {
            fc.pre(Buffer.from(input).indexOf(PREFIX_633) < 0);
            const s = new FactScanner({ nonce: NONCE });
            const out: Uint8Array[] = [];
            for (const c of chunks(input, cuts)) {
              out.push(s.push(c).data);
              // flush() gives up on a withheld prefix and emits it: nothing may be lost or duplicated.
              out.push(s.flush().data);
            }
            expect(latin1(Buffer.concat(out))).toBe(latin1(input));
          },
        ),
        fuzzParams('fact-scanner passthrough', { seed: 18_413, runs: 500, longRuns: 100_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );
});
