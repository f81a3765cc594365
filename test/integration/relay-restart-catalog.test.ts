import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allOf, rootAvailable } from '../support/capabilities.js';
import { CLI_MAIN, runCli } from '../support/cli-runner.js';
import { endProcess, killDaemonsOf } from '../support/daemon-reaper.js';
import { waitFor } from '../support/local-daemon.js';
import { open as openWs, type TestClient } from '../support/relay-test-support.js';
import { hostFor } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';
import { browserAvailable, launchBrowser } from '../support/web-browser.js';

const available = allOf(sshdAvailable(), rootAvailable('a throwaway login user'), browserAvailable());
/** A login user of this file's own (its daemon is nobody else's); removed after. */
const USER = 'ptyrelay-t52-restart';

interface Summary {
  id: string;
  owner: string;
  lastCommand?: { commandLine: string; running: boolean; exitCode?: number };
}

describe.skipIf(!available)(
  'a restarted relay knows every terminal its hosts hold',
  { timeout: 240_000 },
  () => {
    let root: string;
    let sshd: SshdInstance;
    let relay: ChildProcess | undefined;
    let env: NodeJS.ProcessEnv;
    let url = '';
    let token = '';
    const ids: Record<string, string> = {};
    const runtimeDir = () => join(root, 'run');

    /** Starts `ptyrelay serve` (any free port); resolves once it listens. */
    const startRelay = async () => {
      let stderr = '';
      relay = spawn(process.execPath, [CLI_MAIN, 'serve', '--listen', '127.0.0.1:0'], { env });
      relay.stderr?.on('data', (d) => {
        stderr += d;
      });
      relay.stdout?.resume();
      await waitFor(() => /relay listening on (ws:\S+)/.test(stderr), 60_000, 'the relay to listen');
      url = /relay listening on (ws:\S+)/.exec(stderr)![1]!;
      env.PTYRELAY_URL = url;
    };
    const overview = async (): Promise<Summary[]> => {
      const c: TestClient = await openWs(url, { token });
      try {
        return (await c.request('web/overview')).terminals;
      } finally {
        c.close();
      }
    };
    /** The overview once both terminals are in it (adoption runs right after the start). */
    const published = (): Promise<Summary[]> =>
      waitFor(
        async () => {
          const list = await overview();
          const both = list.some((t) => t.id === ids.local) && list.some((t) => t.id === ids.ssh);
          return both ? list : undefined;
        },
        20_000,
        'the terminals to be published',
      );

    beforeAll(async () => {
      root = mkdtempSync(join(tmpdir(), 'ptr-restart-'));
      mkdirSync(join(root, 'home', '.config', 'ptyrelay'), { recursive: true });
      sshd = await startSshd({ user: USER });
      writeFileSync(
        join(root, 'home', '.config', 'ptyrelay', 'config.json'),
        JSON.stringify({ hosts: { sshbox: hostFor(sshd) } }),
        { mode: 0o600 },
      );
      env = {
        ...process.env,
        HOME: join(root, 'home'),
        PTYRELAY_RUNTIME_DIR: runtimeDir(),
        SHELL: '/bin/bash',
      };
      for (const k of [
        'PTYRELAY_TOKEN',
        'PTYRELAY_CONFIG',
        'PTYRELAY_URL',
        'XDG_RUNTIME_DIR',
        'VITEST',
        'PTYRELAY_CLIENT_ID',
      ])
        delete env[k];
      await startRelay();
      token = readFileSync(join(root, 'home', '.config', 'ptyrelay', 'token'), 'utf8').trim();
      const local = await runCli(['open', 'local'], env);
      expect(local.code, local.stderr).toBe(0);
      ids.local = local.stdout.trim();
      const sent = await runCli(['send', ids.local, 'echo one-$((1+1))'], env);
      expect(sent.code, sent.stderr).toBe(0);
      expect(sent.stdout).toContain('one-2');
      const ssh = await runCli(['open', 'sshbox', '--', 'sleep', '300'], env);
      expect(ssh.code, ssh.stderr).toBe(0);
      ids.ssh = ssh.stdout.trim();
    });
    afterAll(async () => {
      await endProcess(relay);
      await killDaemonsOf(runtimeDir());
      spawnSync('pkill', ['-KILL', '-u', USER], { stdio: 'ignore' });
      await sshd?.stop();
      spawnSync('userdel', ['-r', USER], { stdio: 'ignore' });
      rmSync(root, { recursive: true, force: true });
    });

    it('after SIGKILL: the overview, ls and the AHP catalog list them, unclaimed, with the last command', async () => {
      relay!.kill('SIGKILL');
      await endProcess(relay);
      await startRelay();
      const list = await published();
      const local = list.find((t) => t.id === ids.local)!;
      expect(local.owner).toBe('unclaimed');
      expect(local.lastCommand).toEqual({
        commandLine: 'echo one-$((1+1))',
        running: false,
        exitCode: 0,
        durationMs: expect.any(Number),
      });
      expect(list.find((t) => t.id === ids.ssh)!.owner).toBe('unclaimed');

      const ls = await runCli(['ls', '--json'], env);
      expect(ls.code, ls.stderr).toBe(0);
      const rows = JSON.parse(ls.stdout).terminals as { id: string; owner?: string; lastCommand?: unknown }[];
      expect(rows.map((t) => t.id).sort()).toEqual([ids.local, ids.ssh].sort());
      expect(rows.every((t) => t.owner === undefined)).toBe(true);

      const ahp = await openWs(url, { token });
      try {
        const init = await ahp.request('initialize', {
          protocolVersions: ['0.1.0'],
          clientId: 'catalog-check',
        });
        const rootState = init.snapshots.find(
          (s: { resource: string }) => s.resource === 'ahp-root://',
        ).state;
        const resources = rootState.terminals.map((t: { resource: string }) => t.resource);
        expect(resources).toContain(`ptyrelay-terminal:/${ids.local}`);
        expect(resources).toContain(`ptyrelay-terminal:/${ids.ssh}`);
      } finally {
        ahp.close();
      }
    });

    it('the web page (Chromium) lists them with the last command, and opening one claims it', async () => {
      const browser = await launchBrowser();
      try {
        const page = await browser.page();
        await page.goto(`${url.replace('ws:', 'http:')}/#token=${token}`);
        const row = page.locator(`.term-row[data-id="${ids.local}"]`);
        await row.waitFor({ timeout: 15_000 });
        expect(await row.locator('.cmd code').textContent()).toBe('echo one-$((1+1))');
        expect(await row.locator('.owner').textContent()).toBe('unclaimed');
        expect(await page.locator(`.term-row[data-id="${ids.ssh}"]`).count()).toBe(1);
        await row.locator('button').first().click();
        await page.locator(`.pane[data-terminal="${ids.local}"]:not([hidden]) .xterm-rows`).waitFor();
        await waitFor(
          async () => (await overview()).find((t) => t.id === ids.local)?.owner === 'client:web',
          10_000,
          'the page to claim the terminal it opened',
        );
      } finally {
        await browser.close();
      }
    });

    it('after a graceful stop: the next relay publishes them again', async () => {
      relay!.kill('SIGTERM');
      await endProcess(relay);
      await startRelay();
      const list = await published();
      expect(list.find((t) => t.id === ids.local)!.lastCommand?.commandLine).toBe('echo one-$((1+1))');
      const read = await runCli(['read', ids.ssh], env);
      expect(read.code, read.stderr).toBe(0);
    });
  },
);
