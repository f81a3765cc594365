import { describe, expect, it } from 'vitest';
import { PtyRelayError } from '../../provider/errors.js';
import { checkClientUri } from '../../relay/ahp/uris.js';
import { completeWords } from '../../relay/cli/cmd-completion.js';
import { type Command, parseCommand } from '../../relay/cli/command.js';
import { fitStatus } from '../../relay/cli/status-line.js';
import { globalizeError } from '../../relay/stub-link/terminal-ids.js';

const open: Command = {
  usage: 'open HOST [--cwd DIR]',
  summary: 'opens',
  positionals: [1, 1],
  options: { cwd: { type: 'string' }, now: { type: 'boolean' } },
  run: async () => 0,
};
const send: Command = { usage: 'send HOST/ID TEXT', summary: 's', positionals: [2, 2], run: async () => 0 };

function usageMessage(cmd: Command, argv: string[]): string {
  try {
    parseCommand(cmd, argv);
  } catch (err) {
    expect(err).toBeInstanceOf(PtyRelayError);
    expect((err as PtyRelayError).details?.usage).toBe(true);
    return (err as PtyRelayError).message;
  }
  throw new Error('parsed');
}

describe('CLI parts', () => {
  it('parseCommand turns parser failures into our one-line messages', () => {
    expect(usageMessage(open, ['local', '--bogus'])).toBe('unknown option --bogus');
    expect(usageMessage(open, ['local', '--cwd'])).toBe('--cwd needs a value');
    expect(usageMessage(open, ['local', '--now=1'])).toBe('--now takes no value');
    expect(usageMessage(open, [])).toBe('missing HOST');
    expect(usageMessage(send, ['local/pty-1'])).toBe('missing TEXT');
    expect(usageMessage(send, ['a', 'b', 'c'])).toBe('unexpected argument "c"');
    expect(parseCommand(open, ['local', '--cwd', '/x', '--', 'bash', '-l'])).toMatchObject({
      positionals: ['local'],
      rest: ['bash', '-l'],
      values: { cwd: '/x' },
    });
  });

  it('fitStatus keeps the hint whole and shortens the message with an ellipsis', () => {
    const msg = 'ptyrelay: reconnecting to the relay (attempt 3)… — connect ECONNREFUSED 127.0.0.1:7681';
    expect(fitStatus('short', 'Ctrl-] detaches', 80)).toBe('short  Ctrl-] detaches');
    for (const width of [20, 39, 60, 79]) {
      const line = fitStatus(msg, 'Ctrl-] detaches', width);
      expect(Array.from(line).length).toBeLessThanOrEqual(width);
      expect(line.endsWith('…  Ctrl-] detaches')).toBe(true);
    }
    expect(Array.from(fitStatus(msg, 'Ctrl-] detaches', 10)).length).toBeLessThanOrEqual(10);
  });

  it('completion offers commands, flags and positional values', async () => {
    const commands = {
      open,
      send,
      signal: { ...send, usage: 'signal HOST/ID SIG', positionals: [2, 2] },
    } as Record<string, Command>;
    expect(await completeWords(commands, [])).toEqual(['open', 'send', 'signal', '--help', '--version']);
    expect(await completeWords(commands, ['open', 'local'])).toEqual(['--json', '--help', '--cwd', '--now']);
    expect(await completeWords(commands, ['open', 'local', '--cwd'])).toEqual([]);
    expect(await completeWords(commands, ['signal', 'local/pty-1'])).toContain('INT');
    expect(await completeWords(commands, ['open', '--', 'x'])).toEqual([]);
  });

  it('daemon errors name terminals by their global id', () => {
    const e = globalizeError(
      new PtyRelayError('NOT_FOUND', 'no terminal pty-9', { id: 'pty-9' }),
      'pty-9',
      'box/pty-9',
    );
    expect(e).toMatchObject({
      code: 'NOT_FOUND',
      message: 'no terminal box/pty-9',
      details: { id: 'box/pty-9' },
    });
    const untouched = new PtyRelayError('NOT_FOUND', 'no terminal pty-90');
    expect(globalizeError(untouched, 'pty-9', 'box/pty-9')).toBe(untouched);
  });

  it('client-chosen AHP URIs: any scheme, not ours, bounded', () => {
    expect(() => checkClientUri('ahp-terminal:/abc')).not.toThrow();
    expect(() => checkClientUri('urn:x:y')).not.toThrow();
    for (const bad of [
      'ptyrelay-terminal:/local/pty-1',
      'ahp-root://',
      'nocolon',
      'a b:c',
      `x:${'y'.repeat(1024)}`,
    ]) {
      expect(() => checkClientUri(bad), bad).toThrow(PtyRelayError);
    }
  });
});
