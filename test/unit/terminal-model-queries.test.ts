import { describe, expect, it } from 'vitest';
import { TerminalModel } from '../../agent-stub/session/terminal-model.js';
import { parseStubFlags } from '../../agent-stub/stub-flags.js';
import { DEFAULT_PALETTE, PTYRELAY_VERSION } from '../../provider/terminal-queries.js';
import { validateConfig } from '../../relay/service/config.js';

const palette = { foreground: '#010203', background: '#102030', cursor: '#aabbcc' };

/** What the model answers to `query` after `before` was parsed. */
async function answers(query: string, before = '', answering = true): Promise<string> {
  const model = new TerminalModel(80, 24, 100);
  const out: string[] = [];
  if (answering) model.answerQueries((d) => out.push(d), palette);
  await new Promise<void>((r) => model.write(new TextEncoder().encode(before + query), r));
  model.dispose();
  return out.join('');
}

describe('the screen model answers terminal queries', () => {
  it('from its state: DA1, DA2, DSR, CPR after known output, DECRQM, the size', async () => {
    expect(await answers('\x1b[c')).toBe('\x1b[?1;2c');
    expect(await answers('\x1b[>c')).toBe('\x1b[>0;276;0c');
    expect(await answers('\x1b[5n')).toBe('\x1b[0n');
    expect(await answers('\x1b[6n', '\r\n\r\nhello')).toBe('\x1b[3;6R');
    expect(await answers('\x1b[?25$p', '\x1b[?25l')).toBe('\x1b[?25;2$y');
    expect(await answers('\x1b[18t')).toBe('\x1b[8;24;80t');
  });

  it('what @xterm/headless does not answer itself: XTVERSION and the colours', async () => {
    expect(await answers('\x1b[>q')).toBe(`\x1bP>|ptyrelay(${PTYRELAY_VERSION})\x1b\\`);
    expect(await answers('\x1b]10;?\x07')).toBe('\x1b]10;rgb:0101/0202/0303\x1b\\');
    expect(await answers('\x1b]11;?\x1b\\')).toBe('\x1b]11;rgb:1010/2020/3030\x1b\\');
    expect(await answers('\x1b]12;?\x07')).toBe('\x1b]12;rgb:aaaa/bbbb/cccc\x1b\\');
  });

  it('leaves unanswered what it does not know: pixel sizes, the kitty keyboard flags', async () => {
    expect(await answers('\x1b[14t')).toBe('');
    expect(await answers('\x1b[16t')).toBe('');
    expect(await answers('\x1b[?u')).toBe('');
    expect(await answers('\x1b[?u\x1b[c')).toBe('\x1b[?1;2c');
  });

  it('a model that does not answer (one rebuilt from the log) stays silent', async () => {
    expect(await answers('\x1b[c\x1b[6n\x1b]11;?\x07', '', false)).toBe('');
  });

  it('the palette comes from the relay config (terminal.palette) through the stub flag', () => {
    expect(validateConfig({}).terminal.palette).toEqual(DEFAULT_PALETTE);
    expect(validateConfig({ terminal: { palette: { background: '#102030' } } }).terminal.palette).toEqual({
      ...DEFAULT_PALETTE,
      background: '#102030',
    });
    expect(() => validateConfig({ terminal: { palette: { cursor: 'red' } } })).toThrow(
      /terminal\.palette\.cursor must be a colour like "#1e1e1e", got "red"/,
    );
    expect(parseStubFlags(['--palette', '#010203,#102030,#aabbcc'])['--palette']).toEqual(palette);
    expect(() => parseStubFlags(['--palette', '#010203'])).toThrow(/--palette must be three #rrggbb colours/);
  });
});
