import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyFactEvent } from '../../provider/contract.js';
import { type LocalFixture, OutputCollector, startLocal, waitFor } from '../support/local-daemon.js';

const shells = ['bash', 'zsh'] as const;

describe.each(shells)('a real %s through the local daemon', (shell) => {
  let fx: LocalFixture;
  beforeAll(async () => {
    fx = await startLocal();
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  async function open() {
    // Facts can arrive before spawn() resolves: collect from the start, keep this terminal's.
    const facts: PtyFactEvent[] = [];
    const early: PtyFactEvent[] = [];
    const out = new OutputCollector(fx.provider);
    let id: string | undefined;
    const off = fx.provider.onFact((e) => {
      if (id === undefined) early.push(e);
      else if (e.id === id) facts.push(e);
    });
    const r = await fx.provider.spawn({
      cols: 100,
      rows: 30,
      command: shell,
      env: { HOME: fx.home },
      cwd: fx.home,
    });
    id = r.id;
    out.bind(r.id);
    facts.push(...early.filter((e) => e.id === r.id));
    await waitFor(
      () => facts.some((f) => f.fact.type === 'commandDetectionAvailable'),
      10_000,
      'integration',
    ).catch(async (err: Error) => {
      const snap = await fx.provider.getBufferSnapshot(r.id);
      const fg = await fx.provider.getForegroundProcess(r.id);
      throw new Error(
        `${err.message}; facts ${JSON.stringify(facts)}; output ${JSON.stringify(out.text)} early ${early.length} snap ${JSON.stringify(snap)} fg ${JSON.stringify(fg)} r ${JSON.stringify(r)}`,
      );
    });
    return { r, out, facts, off };
  }

  it('echoes, keeps seq contiguous, and never forwards OSC 633', async () => {
    const { r, out, off } = await open();
    await fx.provider.write(r.id, 'echo round-$((20+3))-trip\r');
    await out.waitText('round-23-trip\r\n');
    await fx.provider.write(r.id, 'printf "a%.0s" $(seq 1 5000); echo\r');
    await out.waitText(/a{5000}/);
    expect(out.gaps).toEqual([]);
    expect(out.text).not.toContain('\x1b]633');
    const snap = await fx.provider.getBufferSnapshot(r.id);
    expect(snap.seq).toBeLessThanOrEqual(out.nextSeq);
    off();
    await fx.provider.shutdown(r.id);
  });

  it('reports command facts with exit codes, cwd after cd, and the title', async () => {
    const { r, out, facts, off } = await open();
    for (const cmd of ['true', 'false', '(exit 3)']) {
      await fx.provider.write(r.id, `${cmd}\r`);
      await waitFor(
        () => facts.some((f) => f.fact.type === 'commandFinished' && f.fact.commandLine === cmd),
        10_000,
        `finish of ${cmd}`,
      );
    }
    const finished = facts.flatMap((f) => (f.fact.type === 'commandFinished' ? [f.fact] : []));
    expect(finished.map((f) => [f.commandLine, f.exitCode])).toEqual([
      ['true', 0],
      ['false', 1],
      ['(exit 3)', 3],
    ]);
    const started = facts.flatMap((f) => (f.fact.type === 'commandStarted' ? [f.fact.commandLine] : []));
    expect(started).toEqual(['true', 'false', '(exit 3)']);

    await fx.provider.write(r.id, 'cd /usr/share\r');
    await waitFor(
      () => facts.some((f) => f.fact.type === 'cwd' && f.fact.cwd === '/usr/share'),
      10_000,
      'cwd fact',
    );
    expect(await fx.provider.getCwd(r.id)).toBe('/usr/share');

    await fx.provider.write(r.id, "printf '\\e]0;x\\a'\r");
    await waitFor(() => facts.some((f) => f.fact.type === 'title' && f.fact.title === 'x'), 10_000, 'title');
    expect((await fx.provider.listProcesses()).find((p) => p.id === r.id)?.title).toBe('x');
    // Fact seqs are positions in the stream: monotonic and never past what was delivered.
    const seqs = facts.map((f) => f.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(Math.max(...seqs)).toBeLessThanOrEqual(out.nextSeq);
    off();
    await fx.provider.shutdown(r.id);
  });

  it('SIGINT reaches the foreground sleep and the shell answers again', async () => {
    const { r, out, facts, off } = await open();
    await fx.provider.write(r.id, 'sleep 100\r');
    const fg = await waitFor(async () => {
      const p = await fx.provider.getForegroundProcess(r.id);
      return p?.name === 'sleep' ? p : undefined;
    });
    expect(fg?.name).toBe('sleep');
    expect(await fx.provider.hasChildProcesses(r.id)).toBe(true);
    await fx.provider.sendSignal(r.id, 'SIGINT');
    await waitFor(
      () => facts.some((f) => f.fact.type === 'commandFinished' && f.fact.commandLine === 'sleep 100'),
      5_000,
      'sleep to end',
    );
    const fin = facts.find((f) => f.fact.type === 'commandFinished' && f.fact.commandLine === 'sleep 100');
    expect(fin?.fact.type === 'commandFinished' && fin.fact.exitCode).toBe(130);
    await fx.provider.write(r.id, 'echo alive-$((6*7))\r');
    await out.waitText('alive-42');
    expect((await fx.provider.getForegroundProcess(r.id))?.name).toBe(shell);
    off();
    await fx.provider.shutdown(r.id);
  });

  it('reports the exit code of the shell and of a signal', async () => {
    const { r, off } = await open();
    const exits: { exitCode: number; signal?: string }[] = [];
    const offExit = fx.provider.onExit((e) => {
      if (e.id === r.id) exits.push(e);
    });
    await fx.provider.write(r.id, 'exit 7\r');
    await waitFor(() => exits.length > 0, 10_000, 'exit');
    expect(exits[0]).toMatchObject({ exitCode: 7 });
    expect(exits[0].signal).toBeUndefined();

    const k = await fx.provider.spawn({ cols: 80, rows: 24, command: 'sleep', args: ['100'] });
    const kexits: { exitCode: number; signal?: string }[] = [];
    const offK = fx.provider.onExit((e) => {
      if (e.id === k.id) kexits.push(e);
    });
    await fx.provider.sendSignal(k.id, 'SIGKILL');
    await waitFor(() => kexits.length > 0, 10_000, 'kill');
    expect(kexits[0]).toEqual({ id: k.id, incarnationId: k.incarnationId, exitCode: 137, signal: 'SIGKILL' });
    off();
    offExit();
    offK();
  });
});
