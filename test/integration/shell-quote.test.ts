import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { shellJoin, shellQuote } from '../../relay/deploy/shell-quote.js';
import { programsAvailable } from '../support/shell-users.js';

/**
 * shellQuote through real shells: every word comes back as the exact argv entry, and nothing in it
 * runs (each attempt would create a file in the scratch dir). Every remote script runs under
 * /bin/sh; bash and zsh are checked too because a quoting bug there is a review finding (zsh's
 * `=word` expansion).
 */
const SHELLS = ['/bin/sh', '/bin/dash', '/bin/bash', '/usr/bin/zsh'];
const ECHO_ARGV = 'process.stdout.write(JSON.stringify(process.argv.slice(1)))';
/** Seeded so a failure replays; one shell run carries every sampled word. */
const FUZZ = { seed: 182_026, numRuns: 300 };

const scratch = mkdtempSync(join(tmpdir(), 'ptr-quote-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Words that would run something, expand, or split if they reached a shell unquoted. */
const HOSTILE = [
  '$(touch dollar-paren)',
  '`touch backtick`',
  'a; touch semicolon',
  'a\ntouch newline',
  'a\r\ntouch crlf',
  '=ls',
  '=touch',
  'a=b',
  '%self',
  'a && touch and',
  'a | touch pipe',
  'a > redirected',
  '<in',
  '$HOME',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion that must stay literal
  '${HOME}',
  '$((1+1))',
  "it's",
  "'",
  "''",
  '"',
  '\\',
  '\\n',
  '*',
  '?',
  '[a]',
  '{a,b}',
  '~',
  '~root',
  '!',
  '#comment',
  ' leading space',
  'tab\there',
  '',
  '-n',
  '--',
  'ünïcødé ✓',
  '\x1b[31m',
];

function roundTrip(shell: string, words: string[]): { argv: unknown; stderr: string } {
  const script = `exec ${shellJoin([process.execPath, '-e', ECHO_ARGV, '--', ...words])}`;
  // stdin not a socket: bash would read ~/.bashrc when it thinks rshd started it.
  const r = spawnSync(shell, ['-c', script], {
    cwd: scratch,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: scratch },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { argv: r.stdout ? JSON.parse(r.stdout) : undefined, stderr: r.stderr };
}

describe('shellQuote through real shells', () => {
  it('refuses NUL bytes (no shell can carry them)', () => {
    expect(() => shellQuote('a\0b')).toThrow(TypeError);
  });

  it('quotes words a shell would expand: =word, %word, assignments; plain words stay bare', () => {
    expect(shellQuote('=ls')).toBe("'=ls'");
    expect(shellQuote('a=b')).toBe("'a=b'");
    expect(shellQuote('%self')).toBe("'%self'");
    expect(shellQuote('50%')).toBe('50%');
    expect(shellQuote('/usr/bin/node')).toBe('/usr/bin/node');
    expect(shellQuote('')).toBe("''");
  });

  for (const shell of SHELLS) {
    const missing = !programsAvailable([shell]);
    it.skipIf(missing)(`${shell}: hostile words come back verbatim and nothing runs`, () => {
      const { argv, stderr } = roundTrip(shell, HOSTILE);
      expect(stderr).toBe('');
      expect(argv).toEqual(HOSTILE);
      expect(readdirSync(scratch)).toEqual([]);
    });

    it.skipIf(missing)(`${shell}: random strings round-trip (seeded)`, () => {
      // NUL cannot be an argv byte; lone surrogates cannot be UTF-8.
      const words = fc
        .sample(fc.string({ unit: 'binary', maxLength: 40 }), FUZZ)
        .map((w) => Buffer.from(w.replace(/\0/g, ''), 'utf8').toString('utf8'));
      const { argv, stderr } = roundTrip(shell, words);
      expect(stderr).toBe('');
      expect(argv).toEqual(words);
      expect(readdirSync(scratch)).toEqual([]);
    });
  }
});
