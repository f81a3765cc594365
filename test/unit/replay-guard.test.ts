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

  it('answers no query, replayed or live: the stub answers them (DA, DA2, DSR, CPR, DECRQM, colours, DECRQSS)', async () => {
    const { term, guard, sent, live } = setup();
    cleanup = () => term.dispose();
    await guard.replay('prompt$ \x1b[c');
    expect(sent).toEqual([]);
    expect(guard.replaying).toBe(false);
    await live('\x1b[c\x1b[>c\x1b[5n\x1b[6n\x1b[?6n\x1b[?25$p\x1b]11;?\x07\x1bP$qm\x1b\\\x1b[18t');
    expect(sent).toEqual([]);
  });

  it('keeps keystrokes, even those shaped like reports (Ctrl+F3 is ESC[1;5R), typed during a replay', async () => {
    const { term, guard, sent } = setup();
    cleanup = () => term.dispose();
    const replaying = guard.replay(new TextEncoder().encode('a\x1b[6n b\x1b[5n c\x1b[>c'));
    expect(guard.replaying).toBe(true);
    term.input('k', true);
    await replaying;
    term.input('\x1b[1;5R', true);
    expect(sent).toEqual(['k', '\x1b[1;5R']);
  });

  it('displays what a query-shaped but displaying sequence does (title stack CSI 22 t, SGR)', async () => {
    const { term, guard, sent, live } = setup();
    cleanup = () => term.dispose();
    await live('\x1b]0;one\x07\x1b[22t\x1b]0;two\x07\x1b[23t\x1b[1mX');
    expect(sent).toEqual([]);
    expect(term.buffer.active.getLine(0)?.translateToString(true)).toBe('X');
    guard.dispose();
  });

  it('without a parser it drops every report the emulator sends', () => {
    const listeners: Array<(d: string) => void> = [];
    const fake = {
      write: () => {},
      onData: (l: (d: string) => void) => {
        listeners.push(l);
        return { dispose: () => {} };
      },
    };
    const guard = createReplayGuard(fake);
    const sent: string[] = [];
    guard.onData((d) => sent.push(d));
    for (const d of ['\x1b[?1;2c', 'ls\r', '\x1b[3;4R']) for (const l of listeners) l(d);
    expect(sent).toEqual(['ls\r']);
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
