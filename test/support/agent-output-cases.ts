import { expect, it } from 'vitest';
import type { AgentSendResult } from '../../provider/contract.js';
import type { AgentOwner } from '../../relay/agents/agent-owner.js';
import type { TerminalToolService } from '../../relay/agents/terminal-tool-service.js';
import { zshAvailable } from './capabilities.js';
import { codeOf } from './error-code.js';

/** The terminals of one run of the agent suite (agent-suite.ts): its service, owner and helpers. */
export interface AgentSuiteSession {
  readonly service: TerminalToolService;
  readonly owner: AgentOwner;
  /** A new terminal at its first prompt (`command`: the shell). */
  open(env?: Record<string, string>, command?: string): Promise<string>;
  send(
    id: string,
    text: string,
    timeoutMs?: number,
    idleMs?: number,
    enter?: boolean,
  ): Promise<AgentSendResult>;
}

/**
 * What an agent reads back: pages of a long output, a truncated send's omitted lines, commands as
 * records. Registered by endReasonSuite in its describe, on its session, between its cases.
 */
export function agentOutputCases(s: AgentSuiteSession, withPython: ReturnType<typeof it.skipIf>): void {
  it('reads page back over 20,000 lines: half-open ranges, no gaps, at least the last 10,000 lines', async () => {
    const id = await s.open();
    expect((await s.send(id, 'seq 1 20000', 60_000)).reason).toBe('stdin_read');
    const numbers: number[] = [];
    let offset = 0;
    for (;;) {
      const p = await s.service.read(s.owner, id, { offset, count: 700 });
      expect(p.lineBegin).toBe(offset);
      expect(p.lineEnd).toBe(offset + p.lines.length);
      const nums = p.lines.filter((l) => /^\d+$/.test(l)).map(Number);
      numbers.unshift(...nums);
      if (p.lineEnd >= p.totalLines || p.lines.length === 0) break;
      offset = p.lineEnd;
    }
    expect(numbers[numbers.length - 1]).toBe(20000);
    // Consecutive down to the oldest retained line, which is at least 10,000 back.
    expect(numbers[0]).toBeLessThanOrEqual(10_001);
    numbers.forEach((n, i) => {
      expect(n).toBe(numbers[0] + i);
    });
    // The default page is 500 lines.
    expect((await s.service.read(s.owner, id)).lines.length).toBe(500);
    await s.service.close(s.owner, id);
  });

  withPython(
    'a 10 MB output comes back truncated at 256 KiB (UTF-8 intact, newest part) and flagged',
    async () => {
      const id = await s.open();
      const gen =
        "python3 -c \"import sys; w=sys.stdout.write; [w('%08d é %s\\n' % (i, 'x'*88)) for i in range(105000)]\"";
      const r = await s.send(id, gen, 120_000);
      expect(r.reason).toBe('stdin_read');
      expect(r.truncated).toBe(true);
      const bytes = Buffer.byteLength(r.output, 'utf8');
      expect(bytes).toBeLessThanOrEqual(256 * 1024);
      expect(bytes).toBeGreaterThan(200 * 1024);
      expect(r.output).not.toContain('\ufffd');
      expect(r.output).toContain(`00104999 é ${'x'.repeat(88)}`);
      expect(r.output).not.toContain('00000000 é');
      const page = await s.service.read(s.owner, id, { count: 100_000 });
      expect(page.truncated).toBe(true);
      expect(Buffer.byteLength(page.lines.join('\n'), 'utf8')).toBeLessThanOrEqual(256 * 1024);
      expect(page.lines.length).toBeGreaterThan(2000);
      await s.service.close(s.owner, id);
    },
  );

  it('commands as records: exit codes and line ranges; a read by command gives its exact output, also once it left the scrollback', async () => {
    const id = await s.open();
    const readAll = async (opts: { command?: string; from?: number; count?: number }) => {
      const lines: string[] = [];
      let from = opts.from;
      for (;;) {
        const p = await s.service.read(s.owner, id, { ...opts, from });
        lines.push(...p.lines);
        if (p.lineEnd >= p.totalLines || p.lines.length === 0) return { lines, page: p };
        from = p.lineEnd;
      }
    };
    expect(await s.send(id, `printf 'alpha\\nbeta\\n'`)).toMatchObject({ exitCode: 0, commandIds: ['c1'] });
    expect(await s.send(id, 'echo gamma; false')).toMatchObject({ exitCode: 1, commandIds: ['c2'] });
    // Output without a final line break: the record's last line is cut where the command ended.
    expect(await s.send(id, `printf 'no-newline'`)).toMatchObject({ exitCode: 0, commandIds: ['c3'] });
    const listed = await s.service.commands(s.owner, id);
    expect(listed).toMatchObject({ available: true, total: 3 });
    expect(listed.commands.map((c) => [c.id, c.commandLine, c.exitCode, c.running])).toEqual([
      ['c3', `printf 'no-newline'`, 0, false],
      ['c2', 'echo gamma; false', 1, false],
      ['c1', `printf 'alpha\\nbeta\\n'`, 0, false],
    ]);
    const [c3, c2, c1] = listed.commands;
    for (const c of listed.commands) {
      expect(c.durationMs).toBeGreaterThanOrEqual(0);
      expect(c.startedAt).toBeGreaterThan(Date.now() - 600_000);
      expect(c.cwd).toBeTruthy();
    }
    expect([c1.lineEnd! - c1.lineBegin!, c2.lineEnd! - c2.lineBegin!, c3.lineEnd! - c3.lineBegin!]).toEqual([
      2, 1, 1,
    ]);
    expect(c2.lineBegin).toBeGreaterThanOrEqual(c1.lineEnd!);
    expect(c3.lineBegin).toBeGreaterThanOrEqual(c2.lineEnd!);
    const outputs = async () => [
      (await readAll({ command: 'c1' })).lines,
      (await readAll({ command: 'c2' })).lines,
      (await readAll({ command: 'c3' })).lines,
    ];
    expect(await outputs()).toEqual([['alpha', 'beta'], ['gamma'], ['no-newline']]);
    // The same lines by absolute line number (the prompt that follows `no-newline` shares its line).
    const byLine = await s.service.read(s.owner, id, { from: c1.lineBegin, count: 2 });
    expect(byLine.lines).toEqual(['alpha', 'beta']);
    const page = await s.service.read(s.owner, id, { command: 'c1' });
    expect(page).toMatchObject({ lineBegin: c1.lineBegin, lineEnd: c1.lineEnd, totalLines: c1.lineEnd });
    expect(page.command).toEqual(c1);

    // 20,000 later lines: the first three leave the model's scrollback (10,000 rows), not the log.
    const flood = await s.send(id, 'seq 1 20000', 60_000);
    expect(flood).toMatchObject({ reason: 'stdin_read', exitCode: 0, commandIds: ['c4'] });
    const newest = await s.service.read(s.owner, id, { count: 1 });
    expect(newest.logLines! - newest.totalLines).toBeGreaterThan(c3.lineEnd!);
    expect(await outputs()).toEqual([['alpha', 'beta'], ['gamma'], ['no-newline']]);
    const seq = await readAll({ command: 'c4', count: 5000 });
    expect(seq.lines).toEqual(Array.from({ length: 20_000 }, (_, i) => String(i + 1)));
    expect(seq.page.command).toMatchObject({ id: 'c4', commandLine: 'seq 1 20000', exitCode: 0 });
    // A command that is not there, and one still running (its output so far).
    expect((await codeOf(s.service.read(s.owner, id, { command: 'c99' }))).code).toBe('NOT_FOUND');
    const running = await s.send(id, 'echo started; sleep 30', 1000);
    expect(running).toMatchObject({ reason: 'timeout', commandIds: ['c5'] });
    const live = await s.service.read(s.owner, id, { command: 'c5' });
    expect(live.lines).toEqual(['started']);
    expect(live.command).toMatchObject({ id: 'c5', running: true });
    expect((await s.service.commands(s.owner, id, { count: 1 })).commands).toMatchObject([
      { id: 'c5', running: true },
    ]);
    await s.service.signal(s.owner, id, 'INT');
    expect(await s.send(id, '')).toMatchObject({ reason: 'stdin_read', exitCode: 130 });
    expect((await s.service.commands(s.owner, id, { count: 1 })).commands).toMatchObject([
      { id: 'c5', running: false, exitCode: 130 },
    ]);
    await s.service.close(s.owner, id);
  });

  it.skipIf(!zshAvailable())(
    'zsh records its commands too; a shell without integration has none',
    async () => {
      const z = await s.open(undefined, 'zsh');
      expect(await s.send(z, 'echo z-$((6*7)); false')).toMatchObject({ exitCode: 1, commandIds: ['c1'] });
      expect((await s.service.commands(s.owner, z)).commands).toMatchObject([
        { id: 'c1', commandLine: 'echo z-$((6*7)); false', exitCode: 1, running: false },
      ]);
      expect((await s.service.read(s.owner, z, { command: 'c1' })).lines).toEqual(['z-42']);
      // zsh marks output without a final line break (PROMPT_SP) before precmd runs: not part of it.
      expect(await s.send(z, `printf 'zz'`)).toMatchObject({ exitCode: 0, commandIds: ['c2'] });
      expect((await s.service.read(s.owner, z, { command: 'c2' })).lines).toEqual(['zz']);
      // A command that sets PROMPT_EOL_MARK itself still ends its record.
      expect(await s.send(z, 'PROMPT_EOL_MARK=X; true')).toMatchObject({ exitCode: 0, commandIds: ['c3'] });
      expect(await s.send(z, 'false')).toMatchObject({ exitCode: 1, commandIds: ['c4'] });
      expect((await s.service.commands(s.owner, z)).commands.map((c) => [c.id, c.exitCode])).toEqual([
        ['c4', 1],
        ['c3', 0],
        ['c2', 0],
        ['c1', 1],
      ]);
      await s.service.close(s.owner, z);
      const plain = await s.open(undefined, 'sh');
      expect((await s.send(plain, 'echo plain')).output).toMatch(/^plain$/m);
      expect(await s.service.commands(s.owner, plain)).toEqual({ available: false, commands: [], total: 0 });
      await s.service.close(s.owner, plain);
    },
  );

  it('a truncated send names the lines it left out: read back, they and the output are the whole output', async () => {
    const id = await s.open();
    const cmd = 'seq 1 60000 | sed s/^/row-/';
    const r = await s.send(id, cmd, 60_000);
    expect(r).toMatchObject({ reason: 'stdin_read', exitCode: 0, truncated: true });
    expect(Buffer.byteLength(r.output)).toBeLessThanOrEqual(256 * 1024);
    const shown = r.output.split('\n');
    // Whole lines from the first: the output starts at a line boundary.
    expect(shown[0]).toMatch(/^row-\d+$/);
    expect(r.omittedLines).toBeGreaterThan(0);
    const left: string[] = [];
    let from = r.omittedFromLine!;
    while (left.length < r.omittedLines!) {
      const p = await s.service.read(s.owner, id, { from, count: r.omittedLines! - left.length });
      expect(p.lineBegin).toBe(from);
      left.push(...p.lines);
      from = p.lineEnd;
    }
    expect(left).toHaveLength(r.omittedLines!);
    // The first omitted line is the one the send began on: the prompt, then the typed command.
    expect(left[0]!.endsWith(cmd)).toBe(true);
    const rows = Array.from({ length: 60_000 }, (_, i) => `row-${i + 1}`);
    // Byte for byte: the omitted lines, then the output's, are every row (the prompt follows).
    expect([...left.slice(1), ...shown.slice(0, -1)]).toEqual(rows);
    expect(shown[shown.length - 1]).toBe(left[0]!.slice(0, left[0]!.length - cmd.length).trimEnd());
    // The command's record gives its rows alone.
    const [cid] = r.commandIds!;
    const all: string[] = [];
    let next: number | undefined;
    for (;;) {
      const p = await s.service.read(s.owner, id, { command: cid, from: next, count: 20_000 });
      all.push(...p.lines);
      if (p.lineEnd >= p.totalLines) break;
      next = p.lineEnd;
    }
    expect(all).toEqual(rows);
    await s.service.close(s.owner, id);
  });
}
