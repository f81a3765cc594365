import { afterEach, describe, expect, it } from 'vitest';
import { daemonFlags, parseStubFlags } from '../../agent-stub/stub-flags.js';
import { isPtyRelayError } from '../../provider/errors.js';

/** The CONFIG_INVALID message `args` get. */
function refusal(args: string[]): string {
  try {
    parseStubFlags(args);
  } catch (err) {
    expect(isPtyRelayError(err, 'CONFIG_INVALID')).toBe(true);
    return (err as Error).message;
  }
  throw new Error('expected CONFIG_INVALID');
}

describe('the stub flags', () => {
  const home = process.env.HOME;
  afterEach(() => {
    process.env.HOME = home;
  });

  it('a dir: as given, `~/` the home dir', () => {
    process.env.HOME = '/home/u';
    expect(parseStubFlags(['--runtime-dir', '/run/p', '--state-dir', '~/st'])).toEqual({
      '--runtime-dir': '/run/p',
      '--state-dir': '/home/u/st',
    });
  });

  it('a word: as given', () => {
    expect(parseStubFlags(['--start-marker', '--m-1', '--socket', '/s'])).toEqual({
      '--start-marker': '--m-1',
      '--socket': '/s',
    });
  });

  it('a positive number: any finite number above 0', () => {
    expect(parseStubFlags(['--ring-bytes', '65536', '--history-free-percent', '2.5'])).toEqual({
      '--ring-bytes': 65536,
      '--history-free-percent': 2.5,
    });
    expect(refusal(['--ring-bytes', '1k'])).toBe('--ring-bytes must be a positive number, got 1k');
    expect(refusal(['--keep-tail', '0'])).toBe('--keep-tail must be a positive number, got 0');
    expect(refusal(['--pending-cap', '-5'])).toBe('--pending-cap must be a positive number, got -5');
    expect(refusal(['--credit-window', 'Infinity'])).toBe(
      '--credit-window must be a positive number, got Infinity',
    );
    expect(refusal(['--idle-exit-ms', ''])).toBe('--idle-exit-ms must be a positive number, got ');
  });

  it('a non-negative integer: 0 turns it off', () => {
    expect(parseStubFlags(['--scrollback-idle-ms', '0'])).toEqual({ '--scrollback-idle-ms': 0 });
    expect(refusal(['--scrollback-idle-ms', '1.5'])).toBe(
      '--scrollback-idle-ms must be a non-negative integer, got 1.5',
    );
  });

  it('on or off', () => {
    expect(parseStubFlags(['--history', 'off'])).toEqual({ '--history': false });
    expect(parseStubFlags(['--history', 'on'])).toEqual({ '--history': true });
    expect(refusal(['--history', 'yes'])).toBe('--history must be on or off, got yes');
  });

  it('a repeated flag keeps its first value (a host setting before the relay-wide one)', () => {
    expect(parseStubFlags(['--tail-bytes', '1000', '--tail-bytes', '2000'])).toEqual({
      '--tail-bytes': 1000,
    });
  });

  it('refuses an unknown flag, a flag without its value, a word where a flag belongs', () => {
    expect(refusal(['--bogus', '1'])).toBe('unknown option --bogus');
    expect(refusal(['--ring-bytes=65536'])).toBe('unknown option --ring-bytes=65536');
    expect(refusal(['--ring-bytes'])).toBe('--ring-bytes needs a value');
    expect(refusal(['extra'])).toBe('unexpected argument "extra"');
    expect(refusal(['--ring-bytes', '65536', 'extra'])).toBe('unexpected argument "extra"');
  });

  it("passes the daemon's flags on, in order, without the commands' own", () => {
    const args = ['--runtime-dir', '/r', '--tail-bytes', '1', '--start-marker', 'M', '--tail-bytes', '2'];
    expect(daemonFlags(args)).toEqual(['--tail-bytes', '1', '--tail-bytes', '2']);
  });
});
