import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allOf, rootAvailable } from '../support/capabilities.js';
import { runCli } from '../support/cli-runner.js';
import { waitFor } from '../support/local-daemon.js';
import { open as openWs, type TestClient } from '../support/relay-test-support.js';
import { ServeProcess } from '../support/serve-process.js';
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
    let serve: ServeProcess;
    let sshd: SshdInstance;
    let env: NodeJS.ProcessEnv;
    let token = '';
    const ids: Record<string, string> = {};

    const overview = async (): Promise<Summary[]> => {
      const c: TestClient = await openWs(serve.url, { token });
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
      serve = new ServeProcess('ptr-restart-');
      sshd = await startSshd({ user: USER });
      writeFileSync(serve.configFile, JSON.stringify({ hosts: { sshbox: hostFor(sshd) } }), { mode: 0o600 });
      env = serve.env;
      env.SHELL = '/bin/bash';
      await serve.start();
      token = serve.token();
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
      await serve?.cleanup();
      spawnSync('pkill', ['-KILL', '-u', USER], { stdio: 'ignore' });
      await sshd?.stop();
      spawnSync('userdel', ['-r', USER], { stdio: 'ignore' });
    });

    it('after SIGKILL: the overview, ls and the AHP catalog list them, with the owner their host keeps and the last command', async () => {
      await serve.stop('SIGKILL');
      await serve.start();
      const list = await published();
      const local = list.find((t) => t.id === ids.local)!;
      // The CLI opened them: their hosts keep that owner across the relay's restart.
      expect(local.owner).toBe('client:ptyrelay-cli');
      expect(local.lastCommand).toEqual({
        commandLine: 'echo one-$((1+1))',
        running: false,
        exitCode: 0,
        durationMs: expect.any(Number),
      });
      expect(list.find((t) => t.id === ids.ssh)!.owner).toBe('client:ptyrelay-cli');

      const ls = await runCli(['ls', '--json'], env);
      expect(ls.code, ls.stderr).toBe(0);
      const rows = JSON.parse(ls.stdout).terminals as { id: string; owner?: string; lastCommand?: unknown }[];
      expect(rows.map((t) => t.id).sort()).toEqual([ids.local, ids.ssh].sort());
      expect(rows.map((t) => t.owner)).toEqual(['client:ptyrelay-cli', 'client:ptyrelay-cli']);

      const ahp = await openWs(serve.url, { token });
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

    it('the web page (Chromium) lists them with the last command and their owner, and opening one watches it', async () => {
      const browser = await launchBrowser();
      try {
        const page = await browser.page();
        await page.goto(`${serve.httpUrl}/#token=${token}`);
        const row = page.locator(`.term-row[data-id="${ids.local}"]`);
        await row.waitFor({ timeout: 15_000 });
        expect(await row.locator('.cmd code').textContent()).toBe('echo one-$((1+1))');
        expect(await row.locator('.owner').textContent()).toBe('client:ptyrelay-cli');
        expect(await page.locator(`.term-row[data-id="${ids.ssh}"]`).count()).toBe(1);
        await row.locator('button').first().click();
        const rows = page.locator(`.pane[data-terminal="${ids.local}"]:not([hidden]) .xterm-rows`);
        await rows.waitFor();
        // Its history is on the page; the owner stays the CLI's (the page watches).
        await waitFor(
          async () => (await rows.textContent())?.includes('one-2'),
          10_000,
          'the history on the page',
        );
        expect((await overview()).find((t) => t.id === ids.local)?.owner).toBe('client:ptyrelay-cli');
      } finally {
        await browser.close();
      }
    });

    it('after a graceful stop: the next relay publishes them again', async () => {
      await serve.stop('SIGTERM');
      await serve.start();
      const list = await published();
      expect(list.find((t) => t.id === ids.local)!.lastCommand?.commandLine).toBe('echo one-$((1+1))');
      const read = await runCli(['read', ids.ssh], env);
      expect(read.code, read.stderr).toBe(0);
    });
  },
);
