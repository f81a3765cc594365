import { describe, expect, it } from 'vitest';
import { FactScanner, type FactScannerOptions } from '../../agent-stub/session/fact-scanner.js';
import {
  BEL,
  bytes,
  ESC,
  factsOf,
  feed,
  latin1,
  NONCE,
  osc,
  outOf,
  ST,
  scan,
  steppingClock,
  utf8,
} from '../support/fact-scanner-helpers.js';

describe('FactScanner fast path', () => {
  it('returns the very same array and a shared frozen empty fact list for plain text', () => {
    const s = new FactScanner();
    const chunk = bytes('hello world, no escapes here\r\n');
    const r = s.push(chunk);
    expect(r.data).toBe(chunk);
    expect(r.facts).toHaveLength(0);
    expect(Object.isFrozen(r.facts)).toBe(true);
    expect(s.push(bytes('more')).facts).toBe(r.facts);
    expect(s.hasPending()).toBe(false);
  });

  it('does not copy when escape sequences pass through untouched', () => {
    const chunk = bytes(`${ESC}[31mred${ESC}[0m ${osc('8;;http://x')}link${osc('8;;')}`);
    expect(new FactScanner().push(chunk).data).toBe(chunk);
  });

  it('accepts Node Buffers', () => {
    const r = new FactScanner().push(Buffer.from(`a${osc('633;A')}b`));
    expect(utf8(r.data)).toBe('ab');
  });
});

describe('titles, cwd, bell and other OSCs', () => {
  it.each([
    ['OSC 0 + BEL', osc('0;my title')],
    ['OSC 2 + BEL', osc('2;my title')],
    ['OSC 0 + ST', osc('0;my title', ST)],
    ['OSC 2 + ST', osc('2;my title', ST)],
  ])('%s yields a title and passes through unchanged', (_name, seq) => {
    const r = scan(`ab${seq}cd`);
    expect(utf8(r.data)).toBe(`ab${seq}cd`);
    expect(r.facts).toEqual([{ offset: 2 + seq.length, fact: { type: 'title', title: 'my title' } }]);
  });

  it('ignores OSC 1 (icon name) and malformed titles, keeps empty titles', () => {
    expect(factsOf(osc('1;icon') + osc('0') + osc('x;y') + osc(';z'))).toEqual([]);
    expect(factsOf(osc('2;'))).toEqual([{ type: 'title', title: '' }]);
  });

  it('decodes UTF-8 titles even when split mid-character', () => {
    const input = bytes(osc('0;héllo ✓ 🎉'));
    const r = feed(
      new FactScanner(),
      Array.from(input, (b) => Uint8Array.of(b)),
    );
    expect(r.facts).toEqual([{ offset: input.length, fact: { type: 'title', title: 'héllo ✓ 🎉' } }]);
    expect(latin1(r.data)).toBe(latin1(input));
  });

  it('reads OSC 7 file URLs as percent-decoded paths, ignoring the host', () => {
    expect(factsOf(osc('7;file://myhost/home/u/my%20dir/%C3%A9'))).toEqual([
      { type: 'cwd', cwd: '/home/u/my dir/é' },
    ]);
    expect(factsOf(osc('7;file:///tmp', ST))).toEqual([{ type: 'cwd', cwd: '/tmp' }]);
    expect(factsOf(osc('7;file://host/bad%zz%4'))).toEqual([{ type: 'cwd', cwd: '/bad%zz%4' }]);
    expect(factsOf(osc('7;http://host/x') + osc('7;file://hostonly'))).toEqual([]);
    expect(outOf(`${osc('7;file://h/x')}!`)).toBe(`${osc('7;file://h/x')}!`);
  });

  it('reports BEL outside strings as bell, passing it through', () => {
    const r = scan(`a${BEL}b${BEL}${BEL}`);
    expect(utf8(r.data)).toBe(`a${BEL}b${BEL}${BEL}`);
    expect(r.facts.map((f) => f.offset)).toEqual([2, 4, 5]);
    expect(r.facts.every((f) => f.fact.type === 'bell')).toBe(true);
  });

  it('does not report a BEL that terminates an OSC or a DCS/APC/PM/SOS string', () => {
    for (const intro of ['P', '_', '^', 'X']) {
      const input = `${ESC}${intro}data${BEL}x${ESC}${intro}more${ST}${BEL}`;
      const r = scan(input);
      expect(utf8(r.data)).toBe(input);
      expect(r.facts).toEqual([{ offset: input.length, fact: { type: 'bell' } }]);
    }
    expect(factsOf(osc('0;t'))).toEqual([{ type: 'title', title: 't' }]);
  });

  it('passes other OSCs through byte-identical with no facts', () => {
    const input = `${osc('8;id=1;https://e.com')}x${osc('8;;', ST)}${osc('52;c;aGVsbG8=')}${osc('10;?')}${osc('11;rgb:0/0/0', ST)}${osc('')}${osc('634;A')}${osc('63;x')}${osc('6333;A')}`;
    const r = scan(input);
    expect(utf8(r.data)).toBe(input);
    expect(r.facts).toEqual([]);
  });

  it('ignores 8-bit C1 controls', () => {
    const input = Uint8Array.of(0x9d, 0x30, 0x3b, 0x74, 0x9c, 0x41, 0x9b, 0x33, 0x31, 0x6d);
    const r = new FactScanner().push(input);
    expect(r.data).toBe(input);
    expect(r.facts).toEqual([]);
  });
});

describe('OSC 633 shell integration', () => {
  const opts = (): FactScannerOptions => ({ nonce: NONCE, now: steppingClock() });

  it('strips every 633 sequence and reports the prompt/command lifecycle at the right offsets', () => {
    const input = `${osc('633;A')}$ ${osc('633;B', ST)}${osc(`633;E;ls -la;${NONCE}`)}${osc('633;C')}out\r\n${osc('633;D;0', ST)}`;
    const r = scan(input, opts());
    expect(utf8(r.data)).toBe('$ out\r\n');
    expect(r.facts).toEqual([
      { offset: 0, fact: { type: 'commandDetectionAvailable' } },
      { offset: 0, fact: { type: 'promptStart' } },
      { offset: 2, fact: { type: 'promptEnd' } },
      { offset: 2, fact: { type: 'commandStarted', commandLine: 'ls -la' } },
      { offset: 7, fact: { type: 'commandFinished', exitCode: 0, durationMs: 10, commandLine: 'ls -la' } },
    ]);
  });

  it('emits commandDetectionAvailable once, before the first 633 fact of any kind', () => {
    expect(factsOf(osc('633;B') + osc('633;A') + osc('633;B'))).toEqual([
      { type: 'commandDetectionAvailable' },
      { type: 'promptEnd' },
      { type: 'promptStart' },
      { type: 'promptEnd' },
    ]);
    expect(factsOf(osc('633;P;IsWindows=False'))).toEqual([{ type: 'commandDetectionAvailable' }]);
  });

  it.each([
    ['D;0', 0],
    ['D;1', 1],
    ['D;3', 3],
    ['D;130', 130],
    ['D;-1', -1],
    ['D', undefined],
    ['D;', undefined],
    ['D;abc', undefined],
  ])('parses exit code of %s', (d, exitCode) => {
    const [, fin] = factsOf(osc('633;C') + osc(`633;${d}`), opts()).slice(1);
    expect(fin).toStrictEqual(
      exitCode === undefined
        ? { type: 'commandFinished', durationMs: 10 }
        : { type: 'commandFinished', exitCode, durationMs: 10 },
    );
  });

  it('measures duration from C to D with the injected clock', () => {
    const times = [5000, 7345];
    const now = () => times.shift()!;
    const facts = factsOf(osc('633;C') + osc('633;D;2'), { now });
    expect(facts[2]).toEqual({ type: 'commandFinished', exitCode: 2, durationMs: 2345 });
  });

  it('emits nothing for a D without a C since the last D or A', () => {
    const facts = factsOf(
      osc('633;D') +
        osc('633;C') +
        osc('633;D;0') +
        osc('633;D;1') +
        osc('633;C') +
        osc('633;A') +
        osc('633;D;0'),
      opts(),
    );
    expect(facts.map((f) => f.type)).toEqual([
      'commandDetectionAvailable',
      'commandStarted',
      'commandFinished',
      'commandStarted',
      'promptStart',
    ]);
  });

  it('trusts 633;E only with the configured nonce', () => {
    const run = (e: string, o: FactScannerOptions) =>
      factsOf(osc(e) + osc('633;C') + osc('633;D;0'), { ...o, now: steppingClock() }).slice(1);
    const good = run(`633;E;make;${NONCE}`, { nonce: NONCE });
    expect(good).toEqual([
      { type: 'commandStarted', commandLine: 'make' },
      { type: 'commandFinished', exitCode: 0, durationMs: 10, commandLine: 'make' },
    ]);
    const untrusted = [
      { type: 'commandStarted', commandLine: '' },
      { type: 'commandFinished', exitCode: 0, durationMs: 10 },
    ];
    expect(run('633;E;make;wrong', { nonce: NONCE })).toEqual(untrusted);
    expect(run(`633;E;make;${NONCE}x`, { nonce: NONCE })).toEqual(untrusted);
    expect(run('633;E;make', { nonce: NONCE })).toEqual(untrusted);
    expect(run(`633;E;make;${NONCE}`, {})).toEqual(untrusted);
    expect(run('633;E;make;', { nonce: '' })).toEqual(untrusted);
  });

  it('ignores an untrusted E after a trusted one and forgets the command line after D', () => {
    const input = [`633;E;a;${NONCE}`, '633;E;evil;bad', '633;C', '633;D', '633;C', '633;D'].map((b) =>
      osc(b),
    );
    const facts = factsOf(input.join(''), opts());
    expect(facts.slice(1)).toEqual([
      { type: 'commandStarted', commandLine: 'a' },
      { type: 'commandFinished', durationMs: 10, commandLine: 'a' },
      { type: 'commandStarted', commandLine: '' },
      { type: 'commandFinished', durationMs: 10 },
    ]);
  });

  it.each([
    ['echo a\\x3bb', 'echo a;b'],
    ['a\\\\b', 'a\\b'],
    ['x\\x0ay', 'x\ny'],
    ['caf\\xc3\\xA9', 'café'],
    ['\\\\x3b', '\\x3b'],
    ['bad\\x4 \\q end\\', 'bad\\x4 \\q end\\'],
    ['plain ✓', 'plain ✓'],
    ['', ''],
  ])('unescapes command line %j', (escaped, expected) => {
    const facts = factsOf(osc(`633;E;${escaped};${NONCE}`) + osc('633;C'));
    expect(facts[1]).toEqual({ type: 'commandStarted', commandLine: expected });
  });

  it('reports 633;P;Cwd= with escapes and ignores other properties', () => {
    const facts = factsOf(osc('633;P;Cwd=/home/u/a\\x3bb') + osc('633;P;Other=1') + osc('633;P;Cwd='));
    expect(facts).toEqual([{ type: 'commandDetectionAvailable' }, { type: 'cwd', cwd: '/home/u/a;b' }]);
  });

  it('ignores unknown or malformed 633 commands but still strips them', () => {
    expect(outOf(`a${osc('633;Z;x')}${osc('633;')}${osc('633;AB')}b`)).toBe('ab');
    expect(factsOf(osc('633;AB'))).toEqual([{ type: 'commandDetectionAvailable' }]);
  });

  it('passes ESC ] 633 without a semicolon through', () => {
    expect(outOf(osc('633'))).toBe(osc('633'));
  });
});

describe('OSC 133 (FinalTerm)', () => {
  it('passes 133 through and reports facts while no 633 was seen', () => {
    const input = `${osc('133;A')}$ ${osc('133;B', ST)}${osc('133;C')}x${osc('133;D;3;aid=1')}`;
    const r = scan(input, { now: steppingClock() });
    expect(utf8(r.data)).toBe(input);
    expect(r.facts.map((f) => f.fact)).toEqual([
      { type: 'promptStart' },
      { type: 'promptEnd' },
      { type: 'commandStarted', commandLine: '' },
      { type: 'commandFinished', exitCode: 3, durationMs: 10 },
    ]);
    const ends = [osc('133;A'), `$ ${osc('133;B', ST)}`, osc('133;C'), `x${osc('133;D;3;aid=1')}`];
    let at = 0;
    expect(r.facts.map((f) => f.offset)).toEqual(ends.map((part) => (at += part.length)));
  });

  it('ignores 133 facts (still passing bytes) once any 633 was seen', () => {
    const input = `${osc('133;A')}${osc('633;B')}${osc('133;A')}${osc('133;C')}${osc('133;D;0')}`;
    const r = scan(input);
    expect(utf8(r.data)).toBe(`${osc('133;A')}${osc('133;A')}${osc('133;C')}${osc('133;D;0')}`);
    expect(r.facts.map((f) => f.fact.type)).toEqual([
      'promptStart',
      'commandDetectionAvailable',
      'promptEnd',
    ]);
  });
});

describe('termination, aborts and bounded memory', () => {
  it('aborts a pass-through OSC on a non-ST ESC and processes that ESC fresh', () => {
    const r = scan(`${ESC}]0;never${osc('633;A')}x${ESC}]2;also${ESC}[1m${BEL}`);
    expect(utf8(r.data)).toBe(`${ESC}]0;neverx${ESC}]2;also${ESC}[1m${BEL}`);
    expect(r.facts.map((f) => f.fact.type)).toEqual(['commandDetectionAvailable', 'promptStart', 'bell']);
  });

  it('drops an aborted 633 and processes the interrupting ESC fresh', () => {
    const r = scan(`a${ESC}]633;A${ESC}[31mb${ESC}]633;B${osc('0;t')}`);
    expect(utf8(r.data)).toBe(`a${ESC}[31mb${osc('0;t')}`);
    expect(r.facts.map((f) => f.fact.type)).toEqual(['title']);
  });

  it('handles ESC ESC, stray ST and other escapes in ground', () => {
    const r = scan(`${ESC}${ESC}]633;A${ST}${ST}${ESC}(B${ESC}7${ESC}${BEL}`);
    expect(utf8(r.data)).toBe(`${ESC}${ST}${ESC}(B${ESC}7${ESC}${BEL}`);
    expect(r.facts.map((f) => f.fact.type)).toEqual(['commandDetectionAvailable', 'promptStart', 'bell']);
  });

  it('bounds OSC buffering: overlong OSCs pass through (or are stripped) without facts', () => {
    const opts = { nonce: NONCE, maxOscBytes: 32 };
    const long = 'x'.repeat(40);
    const input = `${osc(`0;${long}`)}${osc(`633;E;${long};${NONCE}`)}${osc('633;C')}${osc(`0;${'y'.repeat(30)}`)}`;
    const r = scan(input, opts);
    expect(utf8(r.data)).toBe(`${osc(`0;${long}`)}${osc(`0;${'y'.repeat(30)}`)}`);
    expect(r.facts.map((f) => f.fact)).toEqual([
      { type: 'commandDetectionAvailable' },
      { type: 'commandStarted', commandLine: '' },
      { type: 'title', title: 'y'.repeat(30) },
    ]);
    const huge = osc(`52;c;${'A'.repeat(1 << 20)}`);
    expect(scan(huge).data.length).toBe(huge.length);
  });
});

describe('holding bytes and flush', () => {
  it('holds a trailing ESC until the next push', () => {
    const s = new FactScanner();
    expect(utf8(s.push(bytes(`abc${ESC}`)).data)).toBe('abc');
    expect(s.hasPending()).toBe(true);
    const r = s.push(bytes(`[0m${BEL}`));
    expect(utf8(r.data)).toBe(`${ESC}[0m${BEL}`);
    expect(r.facts).toEqual([{ offset: 5, fact: { type: 'bell' } }]);
    expect(s.hasPending()).toBe(false);
  });

  it('flush() emits held prefix bytes verbatim and returns to ground', () => {
    for (const prefix of [ESC, `${ESC}]`, `${ESC}]6`, `${ESC}]63`, `${ESC}]633`]) {
      const s = new FactScanner();
      expect(s.push(bytes(`x${prefix}`)).data.length).toBe(1);
      expect(s.hasPending()).toBe(true);
      expect(utf8(s.flush().data)).toBe(prefix);
      expect(s.hasPending()).toBe(false);
      expect(utf8(s.push(bytes(`;A${BEL}`)).data)).toBe(`;A${BEL}`);
    }
  });

  it('emits held bytes once the OSC is known not to be 633', () => {
    const s = new FactScanner();
    expect(s.push(bytes(`${ESC}]6`)).data.length).toBe(0);
    expect(s.push(bytes('3')).data.length).toBe(0);
    expect(utf8(s.push(bytes('4;x')).data)).toBe(`${ESC}]634;x`);
    expect(s.hasPending()).toBe(false);
  });

  it('holds the ESC of a possible ST inside an OSC or a string', () => {
    const s = new FactScanner();
    expect(utf8(s.push(bytes(`${ESC}]0;t${ESC}`)).data)).toBe(`${ESC}]0;t`);
    const r = s.push(bytes('\\'));
    expect(utf8(r.data)).toBe(ST);
    expect(r.facts).toEqual([{ offset: 2, fact: { type: 'title', title: 't' } }]);
    expect(utf8(s.push(bytes(`${ESC}Pq${ESC}`)).data)).toBe(`${ESC}Pq`);
    expect(utf8(s.flush().data)).toBe(ESC);
  });

  it('strips a 633 spread over many pushes and drops a partial one on flush()', () => {
    const s = new FactScanner();
    expect(s.push(bytes(`a${ESC}]633;`)).data).toEqual(bytes('a'));
    expect(s.hasPending()).toBe(true);
    expect(s.push(bytes('P;Cwd=/x')).data.length).toBe(0);
    const r = s.push(bytes(`${BEL}b`));
    expect(utf8(r.data)).toBe('b');
    expect(r.facts.map((f) => [f.offset, f.fact.type])).toEqual([
      [0, 'commandDetectionAvailable'],
      [0, 'cwd'],
    ]);
    s.push(bytes(`${ESC}]633;B${ESC}`));
    expect(s.hasPending()).toBe(true);
    expect(s.flush().data.length).toBe(0);
    expect(s.hasPending()).toBe(false);
    expect(utf8(s.push(bytes('\\ok')).data)).toBe('\\ok');
  });

  it('flush() is a no-op when nothing is pending, keeping pass-through OSC state', () => {
    const s = new FactScanner();
    s.push(bytes(`${ESC}]0;ti`));
    expect(s.hasPending()).toBe(false);
    expect(s.flush().data.length).toBe(0);
    expect(s.push(bytes(`tle${BEL}`)).facts).toEqual([
      { offset: 4, fact: { type: 'title', title: 'title' } },
    ]);
  });
});

/** Every kind of sequence, each with both terminators where applicable. */
