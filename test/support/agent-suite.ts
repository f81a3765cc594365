import { expect, it } from 'vitest';
import { readProcStat } from '../../agent-stub/session/proc-info.js';
import type { AgentSendResult, IPtyProvider } from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import type { AgentOwner } from '../../relay/agents/agent-owner.js';
import { TerminalToolService } from '../../relay/agents/terminal-tool-service.js';
import { python3Available, zshAvailable } from './capabilities.js';
import { waitFor } from './local-daemon.js';

/** What the end-reason suite runs against: one provider serving `host`. */
export interface AgentTarget {
  provider: IPtyProvider;
  host: string;
  /** Extra env for the terminal (e.g. a HOME with empty rc files). */
  env?: Record<string, string>;
}

/** A tool service over exactly one host. */
export function serviceFor(t: AgentTarget, ownerGraceMs = 60_000): TerminalToolService {
  return new TerminalToolService({
    hosts: { hosts: () => [t.host], providerFor: () => t.provider },
    ownerGraceMs,
  });
}

/**
 * Makes a git repository of 200 empty commits ("subject-1" … "subject-200") in a new temp dir on
 * the host and prints `repo=<dir>`; the author is set here, the host needs no git config.
 */
const GIT_REPO_200 = [
  'd=$(mktemp -d) && git -C "$d" init -q && for i in $(seq 1 200); do',
  'GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com',
  'git -C "$d" commit -q --allow-empty -m "subject-$i" || break; done; echo "repo=$d"',
].join(' ');

/** Idle threshold of the inferred_idle case. */
const SHORT_IDLE_MS = 3000;
/**
 * Idle threshold of every other case: far above what they wait for, so that on a loaded machine
 * (a slow python3 start) silence cannot end them early; only stdin_read, timeout or session_exit can.
 */
const LONG_IDLE_MS = 20_000;

export async function codeOf(
  p: Promise<unknown>,
): Promise<{ code: string; message: string; details?: unknown }> {
  try {
    await p;
  } catch (err) {
    if (isPtyRelayError(err)) return { code: err.code, message: err.message, details: err.details };
    throw err;
  }
  return { code: 'no error', message: '' };
}

/**
 * Every end reason produced for real, and the cases where other tools report a false "done".
 * Registers its `it`s in the caller's describe; `target()` is ready once beforeAll ran.
 */
export function endReasonSuite(target: () => AgentTarget): void {
  /** The cases that run python3 (a REPL, a socket server, a big output): capability `python3`. */
  const withPython = it.skipIf(!python3Available());
  let service: TerminalToolService;
  let owner: AgentOwner;
  const open = async (env?: Record<string, string>, command = 'bash') => {
    const t = target();
    service ??= serviceFor(t);
    owner ??= service.owner('suite');
    const term = await service.open(owner, t.host, {
      command,
      ...(t.env || env ? { env: { ...t.env, ...env } } : {}),
    });
    // The first prompt: the terminal is ready for input.
    const first = await service.send(owner, term.id, '', { timeoutMs: 30_000, idleMs: LONG_IDLE_MS });
    expect(first.reason).toBe('stdin_read');
    return term.id;
  };
  const send = (
    id: string,
    text: string,
    timeoutMs = 30_000,
    idleMs = LONG_IDLE_MS,
    enter = true,
  ): Promise<AgentSendResult> => service.send(owner, id, text, { timeoutMs, idleMs, enter });

  it('`sleep 1; echo done` ends with stdin_read and exit code 0, after the work', async () => {
    const id = await open();
    const r = await send(id, 'sleep 1; echo do""ne');
    expect(r.reason).toBe('stdin_read');
    expect(r.exitCode).toBe(0);
    expect(r.elapsedMs).toBeGreaterThanOrEqual(1000);
    expect(r.output).toMatch(/^done$/m);
    const failing = await send(id, 'false');
    expect(failing).toMatchObject({ reason: 'stdin_read', exitCode: 1 });
    await service.close(owner, id);
  });

  withPython('a python3 REPL waiting for input is stdin_read (from /proc), not idle', async () => {
    const id = await open();
    const started = await send(id, 'python3 -q');
    expect(started.reason).toBe('stdin_read');
    // A REPL: canonical mode off (readline) or echo on, either way not a password.
    expect(started.awaiting).toBe('program');
    expect(started.output).toContain('>>>');
    // No exit code: no command finished, a program asks for input.
    expect(started.exitCode).toBeUndefined();
    const answer = await send(id, '6*7');
    expect(answer.reason).toBe('stdin_read');
    expect(answer.output).toMatch(/^42$/m);
    const back = await send(id, 'exit()');
    expect(back).toMatchObject({ reason: 'stdin_read', exitCode: 0, awaiting: 'prompt' });
    await service.close(owner, id);
  });

  it('what an input wait waits for: the prompt, `read x` a program, `read -s` a password', async () => {
    const id = await open();
    const plain = await send(id, 'echo at-""prompt');
    expect(plain).toMatchObject({ reason: 'stdin_read', exitCode: 0, awaiting: 'prompt' });
    const question = await send(id, 'read answer');
    expect(question).toMatchObject({ reason: 'stdin_read', awaiting: 'program' });
    expect(question.exitCode).toBeUndefined();
    expect(await send(id, 'yes')).toMatchObject({ reason: 'stdin_read', exitCode: 0, awaiting: 'prompt' });
    const secret = await send(id, `read -s pw; echo "got \${#pw} chars"`);
    expect(secret).toMatchObject({ reason: 'stdin_read', awaiting: 'password' });
    expect(secret.exitCode).toBeUndefined();
    const typed = await send(id, 'hunter2');
    expect(typed).toMatchObject({ reason: 'stdin_read', exitCode: 0, awaiting: 'prompt' });
    expect(typed.output).toMatch(/^got 7 chars$/m);
    expect(typed.output).not.toContain('hunter2');
    // ssh, sudo and git credential prompts read /dev/tty (shown as such in /proc), not their stdin.
    const viaDevTty = await send(id, `read -s pw </dev/tty; echo "got \${#pw} chars"`);
    expect(viaDevTty).toMatchObject({ reason: 'stdin_read', awaiting: 'password' });
    expect((await send(id, 'swordfish')).output).toMatch(/^got 9 chars$/m);
    // Results that are not input waits say nothing about it.
    expect((await send(id, 'sleep 5', 500)).awaiting).toBeUndefined();
    await service.close(owner, id);
  });

  it('agent terminals do not page: `git log` of 200 commits comes back whole; PAGER=less waits in the pager', async () => {
    const id = await open();
    const vars = await send(
      id,
      `printf '<%s>' "$PAGER" "$GIT_PAGER" "$MANPAGER" "\${SYSTEMD_PAGER-unset}"; echo`,
    );
    expect(vars.output).toMatch(/^<cat><cat><cat><>$/m);
    const made = await send(id, GIT_REPO_200, 120_000);
    expect(made).toMatchObject({ reason: 'stdin_read', exitCode: 0 });
    const repo = /^repo=(\/\S+)$/m.exec(made.output)?.[1];
    expect(repo).toBeDefined();
    try {
      const log = await send(id, `cd ${repo} && git log`);
      expect(log).toMatchObject({ reason: 'stdin_read', exitCode: 0, awaiting: 'prompt', truncated: false });
      expect(log.output).toMatch(/^ {4}subject-1$/m);
      expect(log.output).toMatch(/^ {4}subject-200$/m);
      expect(log.output.match(/^ {4}subject-\d+$/gm)).toHaveLength(200);

      // The caller sets PAGER: none of the four is added, so git pages with less.
      const paged = await open({ PAGER: 'less' });
      const inPager = await send(paged, `cd ${repo} && git log`);
      expect(inPager).toMatchObject({ reason: 'stdin_read', awaiting: 'pager' });
      expect(inPager.exitCode).toBeUndefined();
      expect(inPager.output).toMatch(/subject-200/);
      expect(inPager.output).not.toMatch(/subject-1$/m);
      const left = await send(paged, 'q', 30_000, LONG_IDLE_MS, false);
      expect(left).toMatchObject({ reason: 'stdin_read', exitCode: 0, awaiting: 'prompt' });
      await service.close(owner, paged);
    } finally {
      if (repo) await send(id, `cd / && rm -rf ${repo}`);
      await service.close(owner, id);
    }
  });

  it('`sleep 30` with a 1 s timeout ends with timeout; SIGINT then brings the prompt back', async () => {
    const id = await open();
    const r = await send(id, 'sleep 30', 1000);
    expect(r.reason).toBe('timeout');
    expect(r.elapsedMs).toBeGreaterThanOrEqual(1000);
    expect(r.elapsedMs).toBeLessThan(10_000);
    expect(r.exitCode).toBeUndefined();
    await service.signal(owner, id, 'INT');
    const w = await send(id, '');
    expect(w).toMatchObject({ reason: 'stdin_read', exitCode: 130 });
    await service.close(owner, id);
  });

  it('`exit` ends with session_exit and the shell exit code', async () => {
    const id = await open();
    const r = await send(id, 'exit 7');
    expect(r).toMatchObject({ reason: 'session_exit', exitCode: 7 });
    // A later send on the exited terminal reports the same, without typing.
    expect((await send(id, 'echo nope')).reason).toBe('session_exit');
    expect(service.list(owner).find((t) => t.id === id)?.exitCode).toBe(7);
    await service.close(owner, id);
  });

  withPython(
    'a program that prints and then blocks on a socket (tty still open) ends with inferred_idle',
    async () => {
      const id = await open();
      const prog =
        "python3 -c \"import socket;s=socket.socket();s.bind(('127.0.0.1',0));s.listen();print('listen'+'ing',flush=True);s.accept()\"";
      const r = await send(id, prog, 30_000, SHORT_IDLE_MS);
      expect(r.reason).toBe('inferred_idle');
      expect(r.elapsedMs).toBeGreaterThanOrEqual(SHORT_IDLE_MS);
      expect(r.output).toMatch(/^listening$/m);
      await service.signal(owner, id, 'INT');
      expect((await send(id, '')).reason).toBe('stdin_read');
      await service.close(owner, id);
    },
  );

  withPython('no false done: a heredoc typed as one send ends when the script has run', async () => {
    const id = await open();
    const r = await send(
      id,
      "python3 - <<'EOF'\nimport time\ntime.sleep(2)\nprint('heredoc-' + 'done')\nEOF",
    );
    expect(r.reason).toBe('stdin_read');
    expect(r.elapsedMs).toBeGreaterThanOrEqual(2000);
    expect(r.output).toMatch(/^heredoc-done$/m);
    expect(r.exitCode).toBe(0);
    const cat = await send(id, "cat <<'EOF'\nalpha\n$ beta\nEOF");
    expect(cat).toMatchObject({ reason: 'stdin_read', exitCode: 0 });
    expect(cat.output).toMatch(/^\$ beta$/m);
    await service.close(owner, id);
  });

  it('no false done: a changed PS1 still ends at the real prompt', async () => {
    const id = await open();
    expect((await send(id, "PS1='custom> '")).reason).toBe('stdin_read');
    const r = await send(id, 'sleep 2; echo ps1-ok');
    expect(r.reason).toBe('stdin_read');
    expect(r.elapsedMs).toBeGreaterThanOrEqual(2000);
    expect(r.output).toMatch(/^ps1-ok$/m);
    expect(r.output).toContain('custom>');
    expect(r.exitCode).toBe(0);
    await service.close(owner, id);
  });

  withPython('no false done: a fake `$ ` prompt followed by 2 s of work', async () => {
    const id = await open();
    const r = await send(
      id,
      `python3 -c "import sys,time; sys.stdout.write('\\$ '); sys.stdout.flush(); time.sleep(2); print('wor' + 'ked')"`,
    );
    expect(r.reason).toBe('stdin_read');
    expect(r.elapsedMs).toBeGreaterThanOrEqual(2000);
    expect(r.output).toMatch(/^\$ worked$/m);
    expect(r.exitCode).toBe(0);
    await service.close(owner, id);
  });

  it('SEND_IN_PROGRESS names the terminal; read and signal do not wait behind the send; SIGINT stops `sleep 100`', async () => {
    const id = await open();
    const t0 = Date.now();
    const long = send(id, 'sleep 100', 60_000);
    const second = await codeOf(send(id, 'echo second'));
    expect(second.code).toBe('SEND_IN_PROGRESS');
    expect(second.message).toContain(id);
    expect(second.details).toEqual({ id });
    await new Promise((r) => setTimeout(r, 300));
    const page = await service.read(owner, id, { count: 5 });
    expect(page.lines.join('\n')).toContain('sleep 100');
    // Far below the 100 s the send waits for: the read did not queue behind it.
    expect(Date.now() - t0).toBeLessThan(20_000);
    await service.signal(owner, id, 'SIGINT');
    const r = await long;
    expect(r).toMatchObject({ reason: 'stdin_read', exitCode: 130 });
    expect(r.elapsedMs).toBeLessThan(30_000);
    const next = await send(id, 'echo after-$((40+2))');
    expect(next).toMatchObject({ reason: 'stdin_read', exitCode: 0 });
    expect(next.output).toMatch(/^after-42$/m);
    await service.close(owner, id);
  });

  it('reads page back over 20,000 lines: half-open ranges, no gaps, at least the last 10,000 lines', async () => {
    const id = await open();
    expect((await send(id, 'seq 1 20000', 60_000)).reason).toBe('stdin_read');
    const numbers: number[] = [];
    let offset = 0;
    for (;;) {
      const p = await service.read(owner, id, { offset, count: 700 });
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
    expect((await service.read(owner, id)).lines.length).toBe(500);
    await service.close(owner, id);
  });

  withPython(
    'a 10 MB output comes back truncated at 256 KiB (UTF-8 intact, newest part) and flagged',
    async () => {
      const id = await open();
      const gen =
        "python3 -c \"import sys; w=sys.stdout.write; [w('%08d é %s\\n' % (i, 'x'*88)) for i in range(105000)]\"";
      const r = await send(id, gen, 120_000);
      expect(r.reason).toBe('stdin_read');
      expect(r.truncated).toBe(true);
      const bytes = Buffer.byteLength(r.output, 'utf8');
      expect(bytes).toBeLessThanOrEqual(256 * 1024);
      expect(bytes).toBeGreaterThan(200 * 1024);
      expect(r.output).not.toContain('\ufffd');
      expect(r.output).toContain(`00104999 é ${'x'.repeat(88)}`);
      expect(r.output).not.toContain('00000000 é');
      const page = await service.read(owner, id, { count: 100_000 });
      expect(page.truncated).toBe(true);
      expect(Buffer.byteLength(page.lines.join('\n'), 'utf8')).toBeLessThanOrEqual(256 * 1024);
      expect(page.lines.length).toBeGreaterThan(2000);
      await service.close(owner, id);
    },
  );

  it('commands as records: exit codes and line ranges; a read by command gives its exact output, also once it left the scrollback', async () => {
    const id = await open();
    const readAll = async (opts: { command?: string; from?: number; count?: number }) => {
      const lines: string[] = [];
      let from = opts.from;
      for (;;) {
        const p = await service.read(owner, id, { ...opts, from });
        lines.push(...p.lines);
        if (p.lineEnd >= p.totalLines || p.lines.length === 0) return { lines, page: p };
        from = p.lineEnd;
      }
    };
    expect(await send(id, `printf 'alpha\\nbeta\\n'`)).toMatchObject({ exitCode: 0, commandIds: ['c1'] });
    expect(await send(id, 'echo gamma; false')).toMatchObject({ exitCode: 1, commandIds: ['c2'] });
    // Output without a final line break: the record's last line is cut where the command ended.
    expect(await send(id, `printf 'no-newline'`)).toMatchObject({ exitCode: 0, commandIds: ['c3'] });
    const listed = await service.commands(owner, id);
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
    const byLine = await service.read(owner, id, { from: c1.lineBegin, count: 2 });
    expect(byLine.lines).toEqual(['alpha', 'beta']);
    const page = await service.read(owner, id, { command: 'c1' });
    expect(page).toMatchObject({ lineBegin: c1.lineBegin, lineEnd: c1.lineEnd, totalLines: c1.lineEnd });
    expect(page.command).toEqual(c1);

    // 20,000 later lines: the first three leave the model's scrollback (10,000 rows), not the log.
    const flood = await send(id, 'seq 1 20000', 60_000);
    expect(flood).toMatchObject({ reason: 'stdin_read', exitCode: 0, commandIds: ['c4'] });
    const newest = await service.read(owner, id, { count: 1 });
    expect(newest.logLines! - newest.totalLines).toBeGreaterThan(c3.lineEnd!);
    expect(await outputs()).toEqual([['alpha', 'beta'], ['gamma'], ['no-newline']]);
    const seq = await readAll({ command: 'c4', count: 5000 });
    expect(seq.lines).toEqual(Array.from({ length: 20_000 }, (_, i) => String(i + 1)));
    expect(seq.page.command).toMatchObject({ id: 'c4', commandLine: 'seq 1 20000', exitCode: 0 });
    // A command that is not there, and one still running (its output so far).
    expect((await codeOf(service.read(owner, id, { command: 'c99' }))).code).toBe('NOT_FOUND');
    const running = await send(id, 'echo started; sleep 30', 1000);
    expect(running).toMatchObject({ reason: 'timeout', commandIds: ['c5'] });
    const live = await service.read(owner, id, { command: 'c5' });
    expect(live.lines).toEqual(['started']);
    expect(live.command).toMatchObject({ id: 'c5', running: true });
    expect((await service.commands(owner, id, { count: 1 })).commands).toMatchObject([
      { id: 'c5', running: true },
    ]);
    await service.signal(owner, id, 'INT');
    expect(await send(id, '')).toMatchObject({ reason: 'stdin_read', exitCode: 130 });
    expect((await service.commands(owner, id, { count: 1 })).commands).toMatchObject([
      { id: 'c5', running: false, exitCode: 130 },
    ]);
    await service.close(owner, id);
  });

  it.skipIf(!zshAvailable())(
    'zsh records its commands too; a shell without integration has none',
    async () => {
      const z = await open(undefined, 'zsh');
      expect(await send(z, 'echo z-$((6*7)); false')).toMatchObject({ exitCode: 1, commandIds: ['c1'] });
      expect((await service.commands(owner, z)).commands).toMatchObject([
        { id: 'c1', commandLine: 'echo z-$((6*7)); false', exitCode: 1, running: false },
      ]);
      expect((await service.read(owner, z, { command: 'c1' })).lines).toEqual(['z-42']);
      // zsh marks output without a final line break (PROMPT_SP) before precmd runs: not part of it.
      expect(await send(z, `printf 'zz'`)).toMatchObject({ exitCode: 0, commandIds: ['c2'] });
      expect((await service.read(owner, z, { command: 'c2' })).lines).toEqual(['zz']);
      // A command that sets PROMPT_EOL_MARK itself still ends its record.
      expect(await send(z, 'PROMPT_EOL_MARK=X; true')).toMatchObject({ exitCode: 0, commandIds: ['c3'] });
      expect(await send(z, 'false')).toMatchObject({ exitCode: 1, commandIds: ['c4'] });
      expect((await service.commands(owner, z)).commands.map((c) => [c.id, c.exitCode])).toEqual([
        ['c4', 1],
        ['c3', 0],
        ['c2', 0],
        ['c1', 1],
      ]);
      await service.close(owner, z);
      const plain = await open(undefined, 'sh');
      expect((await send(plain, 'echo plain')).output).toMatch(/^plain$/m);
      expect(await service.commands(owner, plain)).toEqual({ available: false, commands: [], total: 0 });
      await service.close(owner, plain);
    },
  );

  it('a truncated send names the lines it left out: read back, they and the output are the whole output', async () => {
    const id = await open();
    const cmd = 'seq 1 60000 | sed s/^/row-/';
    const r = await send(id, cmd, 60_000);
    expect(r).toMatchObject({ reason: 'stdin_read', exitCode: 0, truncated: true });
    expect(Buffer.byteLength(r.output)).toBeLessThanOrEqual(256 * 1024);
    const shown = r.output.split('\n');
    // Whole lines from the first: the output starts at a line boundary.
    expect(shown[0]).toMatch(/^row-\d+$/);
    expect(r.omittedLines).toBeGreaterThan(0);
    const left: string[] = [];
    let from = r.omittedFromLine!;
    while (left.length < r.omittedLines!) {
      const p = await service.read(owner, id, { from, count: r.omittedLines! - left.length });
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
      const p = await service.read(owner, id, { command: cid, from: next, count: 20_000 });
      all.push(...p.lines);
      if (p.lineEnd >= p.totalLines) break;
      next = p.lineEnd;
    }
    expect(all).toEqual(rows);
    await service.close(owner, id);
  });

  withPython(
    'a command typed right after SIGINT reaches the shell, not the interrupted program',
    async () => {
      const id = await open();
      // python3 under a shell without job control (which would take the terminal back when
      // python3 is stopped) that traps INT, so only python3 dies of it.
      const py = await send(
        id,
        `sh -c "trap : INT; python3 -c 'import os; print(\\"pid=%d\\" % os.getpid(), flush=True); input()'; echo inner-\\$?"`,
      );
      expect(py).toMatchObject({ reason: 'stdin_read', awaiting: 'program' });
      const pid = Number(/^pid=(\d+)$/m.exec(py.output)?.[1]);
      expect(pid).toBeGreaterThan(0);
      // Stopped, python3 cannot take the SIGINT: it stays pending, as for a program the scheduler
      // has not run yet on a loaded machine, where Linux's tty read then hands the program the
      // input typed meanwhile before it looks at the signal (the program read the next command
      // and died with it). The signal's answer waits until the signal was taken.
      process.kill(pid, 'SIGSTOP');
      // Stopped before the SIGINT comes (a SIGINT pending with the SIGSTOP is taken first).
      await waitFor(() => readProcStat(pid)?.state === 'T', 10_000, 'python3 stopped');
      const resumeAfterMs = 500;
      const resume = setTimeout(() => process.kill(pid, 'SIGCONT'), resumeAfterMs);
      const t0 = Date.now();
      try {
        await service.signal(owner, id, 'INT');
      } finally {
        clearTimeout(resume);
        if (readProcStat(pid)?.state === 'T') process.kill(pid, 'SIGCONT');
      }
      expect(Date.now() - t0).toBeGreaterThanOrEqual(resumeAfterMs - 50);
      const r = await send(id, 'echo typed-$((6*7))');
      expect(r).toMatchObject({ reason: 'stdin_read', exitCode: 0, awaiting: 'prompt' });
      expect(r.output).toMatch(/^typed-42$/m);
      // python3 died of the SIGINT (the inner shell saw 130), without reading the command.
      const lines = (await service.read(owner, id, { count: 20 })).lines;
      expect(lines).toContain('KeyboardInterrupt');
      expect(lines).toContain('inner-130');
      await service.close(owner, id);
    },
  );

  it('closing the service leaves no terminal behind', async () => {
    const id = await open();
    const providerId = service.list(owner).find((t) => t.id === id)!.providerId;
    await service.dispose({ close: true });
    const left = await target().provider.listProcesses();
    expect(left.filter((p) => p.id === providerId && !p.exited)).toEqual([]);
  });

  it('a service going away without closing leaves its terminals to the next one, owner and id kept', async () => {
    const next = serviceFor(target());
    try {
      const fresh = serviceFor(target());
      const mine = fresh.owner('agent:suite-keeper');
      const opened = await fresh.open(mine, target().host, { command: 'sleep', args: ['300'] });
      await fresh.dispose();
      const held = await target().provider.listProcesses();
      const t = held.find((p) => p.id === opened.providerId && !p.exited);
      expect(t?.agent).toMatchObject({ owner: 'agent:suite-keeper', id: opened.id });
      next.adopt(target().provider, target().host, held);
      const back = next.owner('agent:suite-keeper');
      expect(next.list(back).map((x) => [x.id, x.providerId])).toEqual([[opened.id, opened.providerId]]);
      await next.close(back, opened.id);
    } finally {
      await next.dispose({ close: true });
    }
  });
}
