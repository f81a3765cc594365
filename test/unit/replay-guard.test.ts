import xtermHeadless from '@xterm/headless';
import { afterEach, describe, expect, it } from 'vitest';
import { createReplayGuard, isTerminalReport } from '../../provider/client/replay-guard.js';

const { Terminal } = xtermHeadless;

function setup() {
  const term = new Terminal({ cols: 80, rows: 24, allowProposedApi: true });
  const guard = createReplayGuard(term);
  const sent: string[] = [];
  guard.onData((d) => sent.push(d));
  const live = (data: string) => new Promise<void>((r) => term.write(data, r));
  return { term, guard, sent, live };
}

describe('createReplayGuard', () => {
  let cleanup: (() => void) | undefined;
  afterEach(() => cleanup?.());

  it('drops the DA reply to a query inside replayed data, forwards the same query live', async () => {
    const { term, guard, sent, live } = setup();
    cleanup = () => term.dispose();
    await guard.replay('prompt$ \x1b[c');
    expect(sent).toEqual([]);
    expect(guard.replaying).toBe(false);
    await live('\x1b[c');
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^\x1b\[\?[\d;]+c$/);
  });

  it('drops CPR, DSR and DA2 answers of a replay (bytes too), keeps keystrokes typed meanwhile', async () => {
    const { term, guard, sent, live } = setup();
    cleanup = () => term.dispose();
    const replaying = guard.replay(new TextEncoder().encode('a\x1b[6n b\x1b[5n c\x1b[>c'));
    expect(guard.replaying).toBe(true);
    term.input('k', true);
    await replaying;
    expect(sent).toEqual(['k']);
    await live('\x1b[6n');
    expect(sent[1]).toMatch(/^\x1b\[\d+;\d+R$/);
  });

  it('stops forwarding after dispose', async () => {
    const { term, guard, sent, live } = setup();
    cleanup = () => term.dispose();
    guard.dispose();
    await live('\x1b[c');
    expect(sent).toEqual([]);
  });

  it('classifies reports and keystrokes', () => {
    expect(isTerminalReport('\x1b[?1;2c')).toBe(true);
    expect(isTerminalReport('\x1b[12;40R')).toBe(true);
    expect(isTerminalReport('\x1b]11;rgb:0000/0000/0000\x1b\\')).toBe(true);
    expect(isTerminalReport('\x1bP1$r0m\x1b\\')).toBe(true);
    expect(isTerminalReport('\x1b[?1;2c\x1b[0n')).toBe(true);
    expect(isTerminalReport('ls\r')).toBe(false);
    expect(isTerminalReport('\x1b[A')).toBe(false);
    expect(isTerminalReport('\x1b')).toBe(false);
  });
});
