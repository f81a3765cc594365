import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_MAIN, cliInPty, runCli } from '../support/cli-runner.js';
import { endProcess, killDaemonsOf } from '../support/daemon-reaper.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';

const MAIN = CLI_MAIN;
const cli = (args: string[], env: NodeJS.ProcessEnv) => runCli(args, env, { timeoutMs: 20_000 });

// biome-ignore lint/suspicious/noExplicitAny: parsed CLI output, checked field by field
async function cliJson(args: string[], env: NodeJS.ProcessEnv): Promise<any> {
  const dash = args.indexOf('--');
  const withJson = dash < 0 ? [...args, '--json'] : [...args.slice(0, dash), '--json', ...args.slice(dash)];
  const r = await cli(withJson, env);
  if (r.code !== 0) throw new Error(`ptyrelay ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** `ptyrelay attach ID` in a real PTY, like a user at a terminal. */
const attachInPty = (id: string, env: NodeJS.ProcessEnv) => cliInPty(['attach', id], env);

// A dozen CLI runs in a row: each starts a Node process, seconds apiece on a loaded machine.
describe('ptyrelay CLI against a running relay', { timeout: 180_000 }, () => {
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

  it('history exports the raw output from a seq, byte-exact (> 1 page)', async () => {
    const opened = await cliJson(
      ['open', 'local', '--', 'sh', '-c', 'seq 1 300000; echo HISTORY-END; exec sleep 600'],
      env,
    );
    const id: string = opened.id;
    await waitFor(
      async () => (await cliJson(['read', id], env)).text.includes('HISTORY-END'),
      20_000,
      'the output to end',
    );
    const whole = await cli(['history', id], { ...env });
    expect(whole.code).toBe(0);
    // Progress lines may appear on stderr; a gap in the history would be said there too.
    expect(whole.stderr).not.toMatch(/no longer held/);
    const lines = `${Array.from({ length: 300000 }, (_, i) => String(i + 1)).join('\r\n')}\r\nHISTORY-END\r\n`;
    // stdout as a string is fine: the output is ASCII.
    expect(whole.stdout).toBe(lines);
    const from = await cli(['history', id, '--from', '1000000'], { ...env });
    expect(from.stdout).toBe(lines.slice(1000000));
    await cliJson(['kill', id], env);
  });

  it('open / ls / send / read / signal / kill with --json, and claims per client id', async () => {
    const opened = await cliJson(
      ['open', 'local', '--cwd', fx.local.home, '--', 'bash', '--norc', '--noprofile'],
      env,
    );
    const id: string = opened.id;
    expect(id).toMatch(/^local\/pty-\d+$/);
    const ls = await cliJson(['ls'], env);
    expect(ls.terminals.find((t: { id: string }) => t.id === id)).toMatchObject({
      owner: 'client:ptyrelay-cli',
    });
    expect((await cliJson(['hosts'], env)).hosts.map((h: { name: string }) => h.name)).toEqual(['local']);
    expect(await cliJson(['send', id, 'echo cli-$((6*7))'], env)).toMatchObject({ ok: true });
    await waitFor(
      async () => (await cliJson(['read', id], env)).text.includes('cli-42'),
      10_000,
      'cli-42 on screen',
    );
    const raw = await cliJson(['read', id, '--raw'], env);
    expect(raw.data).toContain('cli-42\r\n');
    expect(await cliJson(['signal', id, 'INT'], env)).toMatchObject({ ok: true, signal: 'SIGINT' });
    // Another client id does not own it.
    const intruder = await cli(['send', id, 'nope', '--json'], {
      ...env,
      PTYRELAY_CLIENT_ID: 'someone-else',
    });
    expect(intruder.code).toBe(1);
    expect(JSON.parse(intruder.stderr).error.code).toBe('NOT_OWNER');
    expect(await cliJson(['kill', id, '--now'], env)).toMatchObject({ ok: true, id });
    expect((await cliJson(['ls', 'local'], env)).terminals.map((t: { id: string }) => t.id)).not.toContain(
      id,
    );
    const missing = await cli(['read', 'local/pty-99999', '--json'], env);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr).error.code).toBe('NOT_FOUND');
    const usage = await cli(['open'], env);
    expect(usage.code).toBe(2);
    expect((await cli(['attach', '--help'], env)).stdout).toContain('Ctrl-]');
  });

  it('attach: type, see output, Ctrl-] detach, reattach with the screen back, survive a relay outage', async () => {
    const { id } = await cliJson(
      ['open', 'local', '--cwd', fx.local.home, '--', 'bash', '--norc', '--noprofile'],
      env,
    );
    const first = attachInPty(id, env);
    await first.wait(/[#$] $/);
    first.p.write('echo typed-$((40+2))\r');
    await first.wait('typed-42');
    first.p.write('\x1d');
    await waitFor(() => first.exited() !== undefined, 5000, 'detach');
    expect(first.exited()).toBe(0);
    expect(first.text()).toContain(`detached from ${id}`);

    // Second attach through a proxy we can break.
    const proxy = await FaultProxy.start({ host: '127.0.0.1', port: fx.port });
    try {
      const second = attachInPty(id, { ...env, PTYRELAY_URL: `ws://127.0.0.1:${proxy.port}` });
      await second.wait('typed-42'); // the screen is repainted from the snapshot
      second.p.write('echo again-$((1+1))\r');
      await second.wait('again-2');
      proxy.refuse(true);
      proxy.cut();
      await second.wait('reconnecting to the relay');
      second.p.write('echo offline-$((2+3))\r'); // queued while the relay is unreachable
      await new Promise((r) => setTimeout(r, 300));
      proxy.refuse(false);
      await second.wait('offline-5\r', 15_000);
      // Typed once, applied once: the command echo line and its output, nothing more.
      expect(second.text().split('offline-5').length).toBe(2);
      second.p.write('exit 7\r');
      await waitFor(() => second.exited() !== undefined, 5000, 'exit');
      expect(second.text()).toContain(`${id} exited (exit code 7)`);
      expect(second.exited()).toBe(0);
    } finally {
      await proxy.close();
    }
  });
});

describe('ptyrelay serve (npm start) on the default config', { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let runtimeDir: string;
  let relay: ChildProcess | undefined;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'ptr-serve-'));
    home = join(root, 'home');
    runtimeDir = join(root, 'run');
    mkdirSync(home);
  });
  afterAll(async () => {
    // A relay stopped mid-start may still spawn its daemon: wait for its exit, then reap them.
    await endProcess(relay);
    await killDaemonsOf(runtimeDir);
    rmSync(root, { recursive: true, force: true });
  });

  it('prints where it listens and where the token is, and serves a working local terminal', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, PTYRELAY_RUNTIME_DIR: runtimeDir };
    for (const k of ['PTYRELAY_TOKEN', 'PTYRELAY_CONFIG', 'PTYRELAY_URL', 'XDG_RUNTIME_DIR']) delete env[k];
    relay = spawn(process.execPath, [MAIN, 'serve', '--listen', '127.0.0.1:0'], { env });
    let stderr = '';
    relay.stderr?.on('data', (d) => {
      stderr += d;
    });
    const url = await waitFor(
      () => /relay listening on (ws:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1],
      15_000,
      'url',
    );
    await waitFor(() => stderr.includes('token: '), 5000, 'token line');
    expect(stderr).toContain('token: ~/.config/ptyrelay/token (created)');
    const tokenFile = join(home, '.config', 'ptyrelay', 'token');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(tokenFile, 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/);
    // The client side finds the token in the same file (same HOME).
    const cenv = { ...env, PTYRELAY_URL: url };
    const { id } = await cliJson(['open', 'local', '--', 'bash', '--norc', '--noprofile'], cenv);
    await cliJson(['send', id, 'echo served-$((3*3))'], cenv);
    await waitFor(
      async () => (await cliJson(['read', id], cenv)).text.includes('served-9'),
      10_000,
      'served-9',
    );
    await cliJson(['kill', id, '--now'], cenv);
    const exited = new Promise<number | null>((r) => relay?.once('exit', (code) => r(code)));
    relay.kill('SIGTERM');
    expect(await exited).toBe(0);
    relay = undefined;
  });
});
