import { describe, expect, it } from 'vitest';
import type { TerminalRecord } from '../../relay/terminals/terminal-registry.js';
import { TerminalSummaries } from '../../relay/web/terminal-summaries.js';

const rec = (id: string, extra: Partial<TerminalRecord> = {}): TerminalRecord => ({
  id,
  host: 'local',
  claim: { kind: 'client', clientId: 'web' },
  title: 'bash',
  cols: 80,
  rows: 24,
  incarnationId: 'i1',
  createdAt: 1,
  ...extra,
});

describe('TerminalSummaries (web overview)', () => {
  it('turns bytes, background gaps and facts into rate, bells, cwd and the last command', () => {
    const s = new TerminalSummaries();
    s.data('local/pty-1', 'i1', 3000);
    s.background({
      id: 'local/pty-1',
      incarnationId: 'i1',
      type: 'dataGap',
      droppedBytes: 7000,
      fromSeq: 0,
      toSeq: 7000,
    });
    s.fact('local/pty-1', 'i1', { type: 'bell' });
    s.background({ id: 'local/pty-1', incarnationId: 'i1', type: 'fact', seq: 9, fact: { type: 'bell' } });
    s.fact('local/pty-1', 'i1', { type: 'cwd', cwd: '/tmp' });
    s.fact('local/pty-1', 'i1', { type: 'commandStarted', commandLine: 'false' });
    s.tick(500);
    let [t] = s.list([rec('local/pty-1', { cwd: '/root' })]);
    expect(t).toMatchObject({ bytesPerSec: 20_000, bells: 2, cwd: '/tmp', owner: 'client:web' });
    expect(t!.lastCommand).toEqual({ commandLine: 'false', running: true });
    s.fact('local/pty-1', 'i1', { type: 'commandFinished', exitCode: 1, durationMs: 4 });
    s.tick(1000);
    [t] = s.list([rec('local/pty-1')]);
    expect(t!.lastCommand).toEqual({ commandLine: 'false', running: false, exitCode: 1, durationMs: 4 });
    expect(t!.bytesPerSec).toBe(0);
  });

  it('forgets what an older incarnation did and terminals that left the registry', () => {
    const s = new TerminalSummaries();
    s.fact('local/pty-1', 'old', { type: 'bell' });
    s.fact('local/pty-1', 'old', { type: 'commandStarted', commandLine: 'make' });
    expect(s.list([rec('local/pty-1')])[0]).toMatchObject({ bells: 0 });
    expect(s.list([rec('local/pty-1')])[0]!.lastCommand).toBeUndefined();
    s.fact('local/pty-1', 'i1', { type: 'bell' });
    expect(s.list([rec('local/pty-1')])[0]!.bells).toBe(1);
    expect(s.list([])).toEqual([]);
    expect(s.list([rec('local/pty-1')])[0]!.bells).toBe(0);
  });

  it('lists oldest first with the user-given name', () => {
    const s = new TerminalSummaries();
    const list = s.list([rec('b', { createdAt: 5, name: 'build' }), rec('a', { createdAt: 2, exitCode: 3 })]);
    expect(list.map((t) => [t.id, t.name, t.exitCode])).toEqual([
      ['a', undefined, 3],
      ['b', 'build', undefined],
    ]);
  });
});
