import { expect, it } from 'vitest';
import { readProcStat } from '../../agent-stub/session/proc-info.js';
import type { AgentSendResult, IPtyProvider } from '../../provider/contract.js';
import type { AgentOwner } from '../../relay/agents/agent-owner.js';
import { TerminalToolService } from '../../relay/agents/terminal-tool-service.js';
import { type AgentSuiteSession, agentOutputCases } from './agent-output-cases.js';
import { python3Available } from './capabilities.js';
import { codeOf } from './error-code.js';
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

/**
 * Every end reason produced for real, and the cases where other tools report a false "done";
 * between them, on the same terminals' service, what an agent reads back (agent-output-cases.ts).
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
  const session: AgentSuiteSession = {
    get service() {
      return service;
    },
    get owner() {
      return owner;
    },
    open,
    send,
  };

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

  agentOutputCases(session, withPython);

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
