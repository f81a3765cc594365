import { describe, expect, it } from 'vitest';
import { FactScanner, type FactScannerOptions } from '../../agent-stub/session/fact-scanner.js';
import {
  BEL,
  bytes,
  ESC,
  expectSame,
  feed,
  latin1,
  NONCE,
  osc,
  ST,
  splitAt,
  steppingClock,
  utf8,
} from '../support/fact-scanner-helpers.js';

const CORPUS = [
  'plain text ✓ 🎉\r\n',
  BEL,
  `${ESC}[1;31mred${ESC}[0m`,
  osc('0;Tïtle ✓'),
  osc('2;second', ST),
  osc('1;icon'),
  osc('7;file://host/home/u/d%20ir'),
  osc('133;A'),
  '$ ',
  osc('133;B', ST),
  osc('133;C'),
  osc('133;D;1'),
  osc('8;;https://example.com', ST),
  'link',
  osc('8;;'),
  `${ESC}Pq#0;2;0;0;0${BEL}${ESC}_apc${ST}${ESC}^pm${ST}${ESC}Xsos${ST}`,
  osc('633;A'),
  '$ ',
  osc('633;B', ST),
  osc(`633;E;echo a\\x3bb \\\\ caf\\xc3\\xa9;${NONCE}`),
  osc('633;C', ST),
  'a;b\r\n',
  osc('633;D;0'),
  osc('133;A'),
  osc('633;P;Cwd=/tmp/x\\x3b'),
  osc('633;E;bad;nonce', ST),
  osc('633;C'),
  osc('633;D;3', ST),
  osc('633;D'),
  `${ESC}]0;aborted${ESC}[2J`,
  `${ESC}]633;B${ESC}[K`,
  osc(`0;${'L'.repeat(70)}`),
  osc(`633;E;${'L'.repeat(70)};${NONCE}`),
  osc('633'),
  osc('6333;x'),
  `${ESC}${ESC}]633;A${BEL}${ESC}(B`,
  `tail ${BEL}end`,
].join('');
const CORPUS_OPTS = (): FactScannerOptions => ({ nonce: NONCE, now: steppingClock(), maxOscBytes: 64 });

describe('split invariance', () => {
  const input = bytes(CORPUS);
  const whole = feed(new FactScanner(CORPUS_OPTS()), [input]);

  it('produces the expected unsplit result for the corpus', () => {
    const out = utf8(whole.data);
    expect(out).not.toContain('633;');
    expect(out).toContain(osc('133;D;1'));
    expect(out).toContain(`${ESC}${ESC}(B`);
    expect(whole.facts.map((f) => f.fact.type).join(' ')).toBe(
      'bell title title cwd promptStart promptEnd commandStarted commandFinished ' +
        'commandDetectionAvailable promptStart promptEnd commandStarted commandFinished cwd ' +
        'commandStarted commandFinished promptStart bell',
    );
    expect(whole.facts.find((f) => f.fact.type === 'cwd' && f.fact.cwd.startsWith('/tmp'))?.fact).toEqual({
      type: 'cwd',
      cwd: '/tmp/x;',
    });
    expect(whole.facts.filter((f) => f.fact.type === 'commandStarted').map((f) => f.fact)).toEqual([
      { type: 'commandStarted', commandLine: '' },
      { type: 'commandStarted', commandLine: 'echo a;b \\ café' },
      { type: 'commandStarted', commandLine: '' },
    ]);
  });

  it('gives the same result when split at every byte position', () => {
    for (let i = 0; i <= input.length; i++) {
      expectSame(feed(new FactScanner(CORPUS_OPTS()), splitAt(input, [i])), whole);
    }
  });

  it('gives the same result for three-way splits', () => {
    for (let i = 0; i <= input.length; i += 5) {
      for (let j = i; j <= input.length; j += 7) {
        expectSame(feed(new FactScanner(CORPUS_OPTS()), splitAt(input, [i, j])), whole);
      }
    }
  });

  it('withholds nothing but a trailing prefix of ESC ] 633 at any cut', () => {
    const prefixes = [1, 2, 3, 4, 5].map((n) => '\x1b]633'.slice(0, n));
    for (let i = 0; i <= input.length; i++) {
      const s = new FactScanner(CORPUS_OPTS());
      const head = s.push(input.slice(0, i));
      expect(latin1(whole.data).startsWith(latin1(head.data))).toBe(true);
      const held = latin1(s.flush().data);
      if (held) {
        expect(prefixes).toContain(held);
        expect(latin1(input.subarray(0, i)).endsWith(held)).toBe(true);
      }
    }
  });

  it('gives the same result when fed one byte per push', () => {
    const chunks = Array.from(input, (b) => Uint8Array.of(b));
    expectSame(feed(new FactScanner(CORPUS_OPTS()), chunks), whole);
  });
});

/** Deterministic PRNG (mulberry32) so failures reproduce. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Piece {
  text: string;
  stripped?: boolean;
  fact?: 'title' | 'bell' | 'cwd';
}

const TEXT = Array.from('word é✓🎉 \r\n');
const term = (r: () => number) => (r() < 0.5 ? BEL : ST);
const PIECES: ((r: () => number) => Piece)[] = [
  (r) => ({ text: TEXT.slice(0, 1 + Math.floor(r() * TEXT.length)).join('') }),
  () => ({ text: BEL, fact: 'bell' }),
  (r) => ({ text: `${ESC}[${Math.floor(r() * 100)}m` }),
  (r) => ({ text: osc(`${r() < 0.5 ? 0 : 2};tï${Math.floor(r() * 9)}`, term(r)), fact: 'title' }),
  (r) => ({ text: osc('7;file://h/p%20q', term(r)), fact: 'cwd' }),
  (r) => ({ text: osc(`133;${'ABCD'[Math.floor(r() * 4)]}`, term(r)) }),
  (r) => ({ text: osc(`8;;http://x/${'y'.repeat(Math.floor(r() * 80))}`, term(r)) }),
  (r) => ({ text: `${ESC}P${'q'.repeat(Math.floor(r() * 5))}${BEL}${BEL}`, fact: 'bell' }),
  () => ({ text: `${ESC}_a${BEL}b${ST}` }),
  (r) => ({ text: osc(`633;${'ABCD'[Math.floor(r() * 4)]}`, term(r)), stripped: true }),
  (r) => ({ text: osc(`633;E;c\\x3bd;${r() < 0.5 ? NONCE : 'bad'}`, term(r)), stripped: true }),
  (r) => ({ text: osc(`633;P;Cwd=/a\\x3b${Math.floor(r() * 9)}`, term(r)), stripped: true, fact: 'cwd' }),
  (r) => ({ text: osc(`633;E;${'z'.repeat(90)}`, term(r)), stripped: true }),
  (r) => ({ text: osc(`2;${'z'.repeat(90)}`, term(r)) }),
];
/** Fragments that interact with their neighbours: checked for split invariance only. */
const MESSY = [ESC, `${ESC}]`, `${ESC}]63`, `${ESC}]633`, `${ESC}]633;`, `${ESC}]0;x`, '\\', '\x9d', '\x9c'];

function randomCorpus(r: () => number, messy: boolean): { input: Uint8Array; pieces: Piece[] } {
  const pieces: Piece[] = [];
  const n = 1 + Math.floor(r() * 40);
  for (let k = 0; k < n; k++) {
    if (messy && r() < 0.2) pieces.push({ text: MESSY[Math.floor(r() * MESSY.length)] });
    else pieces.push(PIECES[Math.floor(r() * PIECES.length)](r));
  }
  return { input: bytes(pieces.map((p) => p.text).join('')), pieces };
}

function randomCuts(r: () => number, len: number): number[] {
  const cuts: number[] = [];
  for (let at = 0; at < len; ) {
    at += 1 + Math.floor(r() * (r() < 0.5 ? 4 : 40));
    if (at < len) cuts.push(at);
  }
  return cuts;
}

describe('randomized split invariance', () => {
  it.each([false, true])('random chunkings match the unsplit scan (messy=%s)', (messy) => {
    const r = prng(messy ? 0xbadc0de : 0x5eed);
    for (let round = 0; round < 300; round++) {
      const { input, pieces } = randomCorpus(r, messy);
      const opts = () => ({ nonce: NONCE, now: steppingClock(), maxOscBytes: 64 });
      const whole = feed(new FactScanner(opts()), [input]);
      if (!messy) {
        expect(utf8(whole.data)).toBe(pieces.map((p) => (p.stripped ? '' : p.text)).join(''));
        for (const type of ['title', 'bell', 'cwd'] as const) {
          const count = whole.facts.filter((f) => f.fact.type === type).length;
          expect(count).toBe(pieces.filter((p) => p.fact === type).length);
        }
      }
      for (let k = 0; k < 10; k++) {
        expectSame(feed(new FactScanner(opts()), splitAt(input, randomCuts(r, input.length))), whole);
      }
    }
  });
});
