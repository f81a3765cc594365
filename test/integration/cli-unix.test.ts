import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stubBuildId } from '../../relay/core/stub-bundle.js';
import { CLI_MAIN, cliInPty, runCli, topLevelKeys } from '../support/cli-runner.js';
import { endProcess, killDaemonsOf } from '../support/daemon-reaper.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { daemonAnswers, pidAlive, waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';

const PACKAGE_VERSION: string = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8'),
).version;
const BASH = ['--', 'bash', '--norc', '--noprofile'];
/** Each CLI run starts a Node process: seconds apiece on a machine shared by many test runs. */
const CLI_TEST_TIMEOUT_MS = 240_000;

/** stderr without progress lines (a slow connect prints `connecting to …` first on a loaded machine). */
function withoutProgress(stderr: string): string {
  return stderr.replace(/^ptyrelay: (connecting to |relay reconnecting|host ).*\n/gm, '');
}

async function openTerminal(env: NodeJS.ProcessEnv): Promise<string> {
  const r = await runCli(['open', 'local', '--json', ...BASH], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).id;
}

describe('ptyrelay as a Unix tool: usage, version, ids, attach', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  let fx: RelayFixture;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    fx = await startRelay();
    env = { ...process.env, PTYRELAY_URL: fx.url, PTYRELAY_TOKEN: TEST_TOKEN, HOME: fx.local.home };
    delete env.PTYRELAY_CLIENT_ID;
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it('--version prints the package version and the stub build', async () => {
    const r = await runCli(['--version'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      `ptyrelay ${PACKAGE_VERSION} (stub build ${stubBuildId()}, node ${process.version})\n`,
    );
    const j = await runCli(['--version', '--json'], env);
    expect(JSON.parse(j.stdout)).toEqual({
      version: PACKAGE_VERSION,
      stubBuild: stubBuildId(),
      node: process.version,
    });
  });

  it('usage errors: our one-line message, the command usage, exit 2', async () => {
    const badUrls = ['127.0.0.1:7791', 'http://127.0.0.1:7791', 'not a url'];
    const [bogus, missing, value, json, ...urls] = await Promise.all([
      runCli(['ls', '--bogus'], env),
      runCli(['send', 'local/pty-1'], env),
      runCli(['open', 'local', '--cwd'], env),
      runCli(['ls', '--bogus', '--json'], env),
      ...badUrls.map((url) => runCli(['ls'], { ...env, PTYRELAY_URL: url })),
    ]);
    expect(bogus).toEqual({
      code: 2,
      stdout: '',
      stderr: 'ptyrelay: unknown option --bogus\nusage: ptyrelay ls [HOST]\n',
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      'ptyrelay: missing TEXT\nusage: ptyrelay send HOST/ID TEXT [--raw] [--wait SECONDS] [--no-wait]\n',
    );
    expect(value.stderr.split('\n')[0]).toBe('ptyrelay: --cwd needs a value');
    badUrls.forEach((url, i) => {
      expect(urls[i]!.code, url).toBe(2);
      expect(urls[i]!.stderr).toBe(
        `ptyrelay: PTYRELAY_URL must be a ws:// or wss:// URL (e.g. ws://127.0.0.1:7681), got ${url}\nusage: ptyrelay ls [HOST]\n`,
      );
    });
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stderr)).toEqual({
      error: {
        code: 'INVALID_ARGUMENT',
        message: 'unknown option --bogus',
        usage: 'usage: ptyrelay ls [HOST]',
      },
    });
  });

  it('terminal ids are HOST/ID everywhere: a bare id is refused with its matches', async () => {
    const id = await openTerminal(env);
    const local = id.split('/')[1]!;
    const bare = await runCli(['read', local], env);
    expect(bare.code).toBe(2);
    expect(withoutProgress(bare.stderr).split('\n')[0]).toBe(
      `ptyrelay: terminal ids are HOST/ID: ${local} matches ${id}`,
    );
    const none = await runCli(['kill', 'pty-99999'], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no host has a terminal pty-99999');
    // The daemon's own error names the terminal by its full id.
    const missing = await runCli(['read', 'local/pty-99999'], env);
    expect(missing.code).toBe(1);
    expect(withoutProgress(missing.stderr)).toBe('ptyrelay: NOT_FOUND: no terminal local/pty-99999\n');
    const attach = cliInPty(['attach', 'local/pty-99999'], env);
    await attach.waitExit();
    expect(attach.text()).toContain('NOT_FOUND: no terminal local/pty-99999');
    const attachBare = cliInPty(['attach', local], env);
    await attachBare.waitExit();
    expect(attachBare.exited()).toBe(2);
    expect(attachBare.text()).toContain(`${local} matches ${id}`);
    await runCli(['kill', id, '--now'], env);
  });

  it('attach refuses a stdin that is not a terminal, pointing at send and read', async () => {
    const id = await openTerminal(env);
    const r = await runCli(['attach', id], env, { timeoutMs: 60_000 });
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(
      /^ptyrelay: attach needs a terminal on stdin;.*ptyrelay send .*ptyrelay read /,
    );
    await runCli(['kill', id, '--now'], env);
  });

  it('attach leaves the scrollback alone (no ESC[3J) and fits the outage status line to the width', async () => {
    const id = await openTerminal(env);
    await runCli(['send', id, 'for i in $(seq 1 60); do echo line-$i; done'], env);
    const proxy = await FaultProxy.start({ host: '127.0.0.1', port: fx.port });
    try {
      const cols = 40;
      const a = cliInPty(
        ['attach', id],
        { ...env, PTYRELAY_URL: `ws://127.0.0.1:${proxy.port}` },
        { cols, rows: 12 },
      );
      await a.wait('line-60'); // the snapshot repaint (with scrollback rows) happened
      a.p.write('echo typed-$((6*7))\r');
      await a.wait('typed-42');
      proxy.refuse(true);
      proxy.cut();
      await a.wait('detaches', 30_000);
      // Every drawn status line (reverse video on the bottom row) fits in cols - 1 and keeps its hint.
      const drawn = [...a.text().matchAll(/\x1b\[7m([^\x1b]*)\x1b\[0m/g)].map((m) => m[1]!);
      expect(drawn.length).toBeGreaterThan(0);
      for (const line of drawn) {
        expect(Array.from(line).length, line).toBeLessThanOrEqual(cols - 1);
        expect(line.endsWith('Ctrl-] detaches'), line).toBe(true);
      }
      expect(drawn.some((l) => l.includes('…'))).toBe(true);
      proxy.refuse(false);
      a.p.write('\x1d');
      await a.waitExit();
      expect(a.text()).not.toContain('\x1b[3J');
    } finally {
      await proxy.close();
    }
    await runCli(['kill', id, '--now'], env);
  });

  it('completion: bash and zsh scripts complete commands, flags and terminal ids', async () => {
    const id = await openTerminal(env);
    const bin = mkdtempSync(join(tmpdir(), 'ptr-completion-'));
    try {
      const shim = join(bin, 'ptyrelay');
      writeFileSync(
        shim,
        `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI_MAIN)} "$@"\n`,
      );
      chmodSync(shim, 0o755);
      const shellEnv = { ...env, PATH: `${bin}:${env.PATH}` };
      const run = (shell: string, args: string[]) =>
        new Promise<string>((resolve) => {
          const child = spawn(shell, args, { env: shellEnv });
          let out = '';
          child.stdout.on('data', (d) => {
            out += d;
          });
          child.on('close', () => resolve(out));
        });
      const bash = (words: string) =>
        run('bash', [
          '--norc',
          '-c',
          `source <(ptyrelay completion bash); COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _ptyrelay; printf '%s\\n' "\${COMPREPLY[@]}"`,
        ]);
      expect((await bash('ptyrelay at')).split('\n')).toContain('attach');
      expect((await bash('ptyrelay open local --c')).trim().split('\n').sort()).toEqual(['--cols', '--cwd']);
      expect((await bash("ptyrelay attach ''")).split('\n')).toContain(id);
      expect((await bash("ptyrelay daemons ''")).split('\n')).toContain('stop');
      const zsh = await run('zsh', [
        '-f',
        '-c',
        `autoload -U compinit; compinit -u -D; source <(ptyrelay completion zsh); print -r -- "comp:\${_comps[ptyrelay]}"; compadd() { print -rl -- "$@" }; words=(ptyrelay send ''); CURRENT=3; _ptyrelay`,
      ]);
      expect(zsh).toContain('comp:_ptyrelay');
      expect(zsh.split('\n')).toContain(id);
      expect(zsh.split('\n')).toContain('--raw');
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
    await runCli(['kill', id, '--now'], env);
  });
});

describe('ptyrelay daemons: list and stop the per-user daemons', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  let fx: RelayFixture;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    fx = await startRelay();
    env = { ...process.env, PTYRELAY_URL: fx.url, PTYRELAY_TOKEN: TEST_TOKEN, HOME: fx.local.home };
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it('lists build, pid, sessions and relays, and stops a daemon only after confirmation', async () => {
    const id = await openTerminal(env);
    const listed = await runCli(['daemons', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const [d] = JSON.parse(listed.stdout).daemons;
    expect(d).toMatchObject({
      host: 'local',
      build: stubBuildId(),
      pid: fx.local.daemonPid,
      sessions: 1,
      current: true,
    });
    expect(d.connections).toBeGreaterThanOrEqual(1);
    const human = await runCli(['daemons', 'local'], env);
    expect(human.stdout).toMatch(
      new RegExp(
        `^HOST +BUILD +PID +SESSIONS +RELAYS +STARTED\\nlocal +${stubBuildId()} +${fx.local.daemonPid} +1 +\\d+ `,
      ),
    );

    // Without a terminal to ask on, a daemon with sessions is not stopped without --yes.
    const noTty = await runCli(['daemons', 'stop', 'local'], env);
    expect(noTty.code).toBe(2);
    expect(noTty.stderr).toContain('has 1 session; they will end: pass --yes');
    // At a terminal: "n" keeps it, "y" stops it and its session.
    const no = cliInPty(['daemons', 'stop', 'local'], env);
    await no.wait('Stop it? [y/N]');
    no.p.write('n\r');
    await no.waitExit();
    expect(no.exited()).toBe(1);
    expect(pidAlive(fx.local.daemonPid)).toBe(true);
    // Someone is attached to the terminal the stop ends: their view ends with it.
    const attached = cliInPty(['attach', id], env);
    attached.p.write('echo READY-$((6*7))\r');
    await attached.wait('READY-42');
    const yes = cliInPty(['daemons', 'stop', 'local'], env);
    await yes.wait('they will end. Stop it? [y/N]');
    yes.p.write('y\r');
    await yes.waitExit();
    expect(yes.exited()).toBe(0);
    expect(yes.text()).toContain(
      `stopped the daemon on local (build ${stubBuildId()}, pid ${fx.local.daemonPid})`,
    );
    await waitFor(() => !pidAlive(fx.local.daemonPid), 15_000, 'daemon exit');
    await attached.waitExit();
    expect(attached.text()).toContain(`${id} exited`);
    // Nothing started a new daemon in its place (the relay forgot the terminals without listing
    // the host, and the fixture's own link went idle); `ls` is the next use.
    expect(await daemonAnswers(fx.local.runtimeDir)).toBe(false);
    const after = JSON.parse((await runCli(['ls', '--json'], env)).stdout).terminals;
    expect(after.map((t: { id: string }) => t.id)).not.toContain(id);
  });
});

describe('ptyrelay serve: stdout carries the --json line first, then log lines without duplicate keys', {
  timeout: CLI_TEST_TIMEOUT_MS,
}, () => {
  let root: string;
  let relay: ChildProcess | undefined;
  let runtimeDir: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'ptr-servejson-'));
    runtimeDir = join(root, 'run');
    mkdirSync(join(root, 'home'));
  });
  afterAll(async () => {
    // A relay stopped mid-start may still spawn its daemon: wait for its exit, then reap them.
    await endProcess(relay);
    await killDaemonsOf(runtimeDir);
    rmSync(root, { recursive: true, force: true });
  });

  it('prints exactly one JSON line before anything else on stdout', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: join(root, 'home'),
      PTYRELAY_RUNTIME_DIR: runtimeDir,
      PTYRELAY_LOG_LEVEL: 'debug',
    };
    for (const k of ['PTYRELAY_TOKEN', 'PTYRELAY_CONFIG', 'PTYRELAY_URL', 'XDG_RUNTIME_DIR', 'VITEST'])
      delete env[k];
    relay = spawn(process.execPath, [CLI_MAIN, 'serve', '--listen', '127.0.0.1:0', '--json'], { env });
    let stdout = '';
    relay.stdout?.on('data', (d) => {
      stdout += d;
    });
    await waitFor(() => stdout.includes('\n'), 60_000, 'first stdout line');
    const [first, ...logs] = stdout.split('\n');
    const info = JSON.parse(first!);
    expect(info).toMatchObject({ url: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+$/), hosts: ['local'] });
    expect(info.level).toBeUndefined(); // not a log line
    const cenv = { ...env, PTYRELAY_URL: info.url };
    const id = await openTerminal(cenv);
    // The relay's link to the local daemon drops and comes back: host-tagged log lines.
    const daemonPid = JSON.parse((await runCli(['daemons', '--json'], cenv)).stdout).daemons[0].pid;
    process.kill(daemonPid, 'SIGKILL');
    await waitFor(() => /"msg":"reconnecting"/.test(stdout), 30_000, 'a reconnecting log line');
    const lines = stdout.split('\n').slice(1).filter(Boolean);
    expect(lines.length).toBeGreaterThan(logs.filter(Boolean).length - 1);
    for (const line of lines) {
      const keys = topLevelKeys(line);
      expect(JSON.parse(line).level, line).toEqual(expect.any(Number));
      expect(new Set(keys).size, `duplicate keys in ${line}`).toBe(keys.length);
    }
    expect(lines.some((l) => topLevelKeys(l).includes('host'))).toBe(true);
    expect(id).toMatch(/^local\//);
    const exited = new Promise<number | null>((r) => relay?.once('exit', (code) => r(code)));
    relay.kill('SIGTERM');
    expect(await exited).toBe(0);
    relay = undefined;
  });
});
