import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AwaitingFacts, awaitingOf, needsModes } from '../../agent-stub/readiness/awaiting.js';
import { parseSttyModes } from '../../agent-stub/readiness/termios-reader.js';

const cooked = { icanon: true, echo: true };
const noEcho = { icanon: true, echo: false };
const raw = { icanon: false, echo: false };

describe('awaitingOf', () => {
  it('our prompt wins: the shell in the foreground at its marker', () => {
    expect(awaitingOf({ atPrompt: true, foreground: ['bash'], modes: raw })).toBe('prompt');
    // Shown by the marker alone where /proc does not tell (macOS).
    expect(awaitingOf({ atPrompt: true, foreground: undefined, modes: undefined })).toBe('prompt');
  });

  it('a pager anywhere in the foreground group, also under git or man', () => {
    for (const fg of [['less'], ['git', 'less'], ['man', 'pager'], ['more'], ['most']]) {
      expect(awaitingOf({ atPrompt: false, foreground: fg, modes: raw })).toBe('pager');
    }
  });

  it('canonical mode with echo off is a password; readline-style (canonical off) and echoing reads are programs', () => {
    expect(awaitingOf({ atPrompt: false, foreground: ['bash'], modes: noEcho })).toBe('password');
    expect(awaitingOf({ atPrompt: false, foreground: ['sudo'], modes: noEcho })).toBe('password');
    expect(awaitingOf({ atPrompt: false, foreground: ['python3'], modes: raw })).toBe('program');
    expect(awaitingOf({ atPrompt: false, foreground: ['bash'], modes: cooked })).toBe('program');
    expect(awaitingOf({ atPrompt: false, foreground: ['cat'], modes: { icanon: false, echo: true } })).toBe(
      'program',
    );
  });

  it('unknown where a deciding fact is missing: no /proc, or no flags for a non-pager', () => {
    expect(awaitingOf({ atPrompt: false, foreground: undefined, modes: noEcho })).toBe('unknown');
    expect(awaitingOf({ atPrompt: false, foreground: ['bash'], modes: undefined })).toBe('unknown');
    expect(awaitingOf({ atPrompt: false, foreground: ['less'], modes: undefined })).toBe('pager');
  });

  it('asks for the flags exactly when they decide', () => {
    const bools = fc.boolean();
    fc.assert(
      fc.property(
        bools,
        fc.option(fc.array(fc.constantFrom('bash', 'less', 'python3', 'git', 'pager')), { nil: undefined }),
        bools,
        bools,
        (atPrompt, foreground, icanon, echo) => {
          const facts: AwaitingFacts = { atPrompt, foreground, modes: { icanon, echo } };
          const withFlags = awaitingOf(facts);
          const without = awaitingOf({ ...facts, modes: undefined });
          // Without the flags the answer changes only when they were asked for.
          if (!needsModes(facts)) expect(without).toBe(withFlags);
          else expect(without).toBe('unknown');
        },
      ),
    );
  });
});

describe('parseSttyModes', () => {
  it('reads icanon and echo from GNU coreutils `stty -a`', () => {
    const gnu = `speed 38400 baud; rows 48; columns 160; line = 0;
intr = ^C; quit = ^\\; erase = ^?; kill = ^U; eof = ^D; eol = <undef>;
-parenb -parodd -cmspar cs8 -hupcl -cstopb cread -clocal -crtscts
-ignbrk -brkint -ignpar -parmrk -inpck -istrip -inlcr -igncr icrnl ixon -ixoff
opost -olcuc -ocrnl onlcr -onocr -onlret -ofill -ofdel nl0 cr0 tab0 bs0 vt0 ff0
isig icanon iexten -echo echoe echok -echonl -noflsh -xcase -tostop -echoprt
echoctl echoke -flusho -extproc
`;
    expect(parseSttyModes(gnu)).toEqual({ icanon: true, echo: false });
    expect(parseSttyModes(gnu.replace(' icanon ', ' -icanon ').replace(' -echo ', ' echo '))).toEqual({
      icanon: false,
      echo: true,
    });
  });

  it('reads busybox `stty -a` (words at line starts) and gives up on anything else', () => {
    expect(parseSttyModes('speed 38400 baud;\nisig -icanon iexten -echo echoe\n')).toEqual(raw);
    expect(parseSttyModes('stty: /dev/pts/9: No such file or directory\n')).toBeUndefined();
    expect(parseSttyModes('icanon echoe echok')).toBeUndefined();
  });
});
