import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import xtermHeadless from '@xterm/headless';
import * as pty from 'node-pty';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PALETTE, PTYRELAY_VERSION, xtermRgb } from '../../provider/terminal-queries.js';
import { createAgentService } from '../../relay/agents/agent-stack.js';
import { createTerminalMcpServer } from '../../relay/agents/mcp-tools.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { allOf, rootAvailable } from '../support/capabilities.js';
import { CLI_MAIN, runCli } from '../support/cli-runner.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { hostFor, relayHome } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';
import { browserAvailable, buildWebInto, launchBrowser, type TestBrowser } from '../support/web-browser.js';

const { Terminal } = xtermHeadless;
const sshAvailable = allOf(sshdAvailable(), rootAvailable('a throwaway login user'));
/** A login user of this file's own (its daemon is nobody else's); removed after. */
const SSH_USER = 'ptyrelay-t53-queries';
const PROBE = join(import.meta.dirname, '..', 'support', 'query-probe.cjs');
const ALL = 'DA1,DA2,DSR5,CPR,DECXCPR,DECRQM,XTVERSION,OSC10,OSC11,OSC12,WIN18,WIN14,KITTY_DA1';

/** The answers the probe printed (`ANSWER NAME HEX`), decoded; `''` for none. */
function answersIn(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/ANSWER (\w+) ([0-9a-f]+|-)/g))
    out[m[1]!] = m[2] === '-' ? '' : Buffer.from(m[2]!, 'hex').toString('latin1');
  return out;
}

/** Each query answered exactly once (a second answer would make the text differ), as the model says. */
function expectOneAnswerEach(a: Record<string, string>, size: { cols: number; rows: number }): void {
  expect(Object.keys(a).sort()).toEqual(ALL.split(',').sort());
  expect(a.DA1).toBe('\x1b[?1;2c');
  expect(a.DA2).toBe('\x1b[>0;276;0c');
  expect(a.DSR5).toBe('\x1b[0n');
  expect(a.CPR).toMatch(/^\x1b\[\d+;4R$/);
  expect(a.DECXCPR).toMatch(/^\x1b\[\?\d+;1R$/);
  expect(a.DECRQM).toMatch(/^\x1b\[\?25;[12]\$y$/);
  expect(a.XTVERSION).toBe(`\x1bP>|ptyrelay(${PTYRELAY_VERSION})\x1b\\`);
  expect(a.OSC10).toBe(`\x1b]10;${xtermRgb(DEFAULT_PALETTE.foreground)}\x1b\\`);
  expect(a.OSC11).toBe(`\x1b]11;${xtermRgb(DEFAULT_PALETTE.background)}\x1b\\`);
  expect(a.OSC12).toBe(`\x1b]12;${xtermRgb(DEFAULT_PALETTE.cursor)}\x1b\\`);
  expect(a.WIN18).toBe(`\x1b[8;${size.rows};${size.cols}t`);
  // No pixel sizes are known, and the kitty keyboard flags are not ours to report: a program
  // falls back on the DA1 it sent after the query.
  expect(a.WIN14).toBe('');
  expect(a.KITTY_DA1).toBe('\x1b[?1;2c');
}

describe('terminal queries are answered exactly once, by the terminal itself', { timeout: 180_000 }, () => {
  let fx: RelayFixture;
  let env: NodeJS.ProcessEnv;
  let webDir: string;
  const probeLine = `node ${PROBE} ${ALL}`;

  beforeAll(async () => {
    webDir = mkdtempSync(join(tmpdir(), 'ptr-queries-web-'));
    fx = await startRelay({ manualAck: true, server: { web: { root: buildWebInto(webDir) } } });
    env = { ...process.env, PTYRELAY_URL: fx.url, PTYRELAY_TOKEN: TEST_TOKEN, HOME: fx.local.home };
    delete env.PTYRELAY_CLIENT_ID;
  });
  afterAll(async () => {
    await fx?.cleanup();
    rmSync(webDir, { recursive: true, force: true });
  });

  it('with no viewer: `ptyrelay run`', async () => {
    // Without a terminal of its own, `run` opens 120x40.
    const r = await runCli(['run', 'local', '--', 'node', PROBE, ALL], env);
    expect(r.code, r.stderr).toBe(0);
    expectOneAnswerEach(answersIn(r.stdout), { cols: 120, rows: 40 });
  });

  it('with no viewer: an agent over MCP', async () => {
    const service = createAgentService({ router: fx.router, registry: fx.registry });
    const owner = service.owner('agent:queries');
    const server = createTerminalMcpServer(service, owner, '0.0.0');
    const [a, b] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'queries', version: '1.0.0' });
    try {
      await Promise.all([server.connect(a), client.connect(b)]);
      const opened = (await client.callTool({
        name: 'terminal_open',
        arguments: { host: 'local', command: 'bash', args: ['--norc', '--noprofile'] },
      })) as CallToolResult;
      const id = (opened.structuredContent as { id: string }).id;
      // The probe reads its terminal in raw mode: the send ends at once with stdin_read.
      await client.callTool({ name: 'terminal_send', arguments: { id, text: probeLine } });
      const output = await waitFor(
        async () => {
          const read = (await client.callTool({
            name: 'terminal_read',
            arguments: { id },
          })) as CallToolResult;
          const t = read.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
          return t.includes('ANSWER KITTY_DA1') && t;
        },
        60_000,
        'the probe to finish',
      );
      // Agent terminals are 160x48 unless asked otherwise.
      expectOneAnswerEach(answersIn(output), { cols: 160, rows: 48 });
    } finally {
      await client.close();
      await server.close();
      await service.dispose({ close: true });
    }
  });

  it('with `ptyrelay attach` in a terminal that answers queries itself (xterm)', async () => {
    const opened = await runCli(
      ['open', 'local', '--cols', '110', '--rows', '35', '--', 'bash', '--norc', '--noprofile'],
      env,
    );
    expect(opened.code, opened.stderr).toBe(0);
    const id = opened.stdout.trim();
    // The user's own terminal: an emulator that answers every query it is shown.
    const user = new Terminal({ cols: 110, rows: 35, allowProposedApi: true });
    const p = pty.spawn(process.execPath, [CLI_MAIN, 'attach', id], {
      cols: 110,
      rows: 35,
      env,
      name: 'xterm',
    });
    p.onData((d) => user.write(d));
    const answered = user.onData((d) => p.write(d));
    try {
      await waitFor(
        async () => /bash-[\d.]+[#$]/.test((await runCli(['read', id], env)).stdout),
        20_000,
        'a prompt',
      );
      p.write(`${probeLine}\r`);
      const text = await waitFor(
        async () => {
          const s = (await runCli(['read', id], env)).stdout;
          return s.includes('ANSWER KITTY_DA1') && s;
        },
        60_000,
        'the probe to finish',
      );
      expectOneAnswerEach(answersIn(text), { cols: 110, rows: 35 });
    } finally {
      answered.dispose();
      p.write('\x1d');
      p.kill();
      user.dispose();
      await runCli(['kill', id], env).catch(() => {});
    }
  });

  describe.skipIf(!browserAvailable())('with web viewers (Chromium)', () => {
    let browser: TestBrowser | undefined;
    const pages: Page[] = [];

    const openPage = async () => {
      browser ??= await launchBrowser();
      const page = await browser.page();
      await page.goto(`${fx.url.replace('ws:', 'http:')}/#token=${TEST_TOKEN}`);
      await page.getByText('● connected').waitFor();
      pages.push(page);
      return page;
    };
    /** Runs the probe in `id` from the first page's keyboard and reads the answers off the host's screen. */
    const probeFromPage = async (page: Page, id: string) => {
      await page.locator(`.pane[data-terminal="${id}"] .xterm-screen`).click();
      await page.keyboard.type(probeLine);
      await page.keyboard.press('Enter');
      return waitFor(
        async () => {
          const s = (await runCli(['read', id], env)).stdout;
          return s.includes('ANSWER KITTY_DA1') && s;
        },
        60_000,
        'the probe to finish',
      );
    };
    const paneSize = (page: Page, id: string) =>
      page.evaluate((tid) => {
        const rows = document.querySelectorAll(`.pane[data-terminal="${tid}"] .xterm-rows > div`).length;
        return rows;
      }, id);

    it('one tab, then two tabs showing the same terminal: each query still answered once', async () => {
      try {
        await twoTabs();
      } finally {
        await browser?.close();
      }
    });

    const twoTabs = async () => {
      const one = await openPage();
      await one.getByRole('button', { name: '+ New terminal' }).click();
      const dialog = one.getByRole('dialog', { name: 'New terminal' });
      await dialog.locator('select[name=host]').selectOption('local');
      await dialog.locator('input[name=command]').fill('bash --norc --noprofile');
      await dialog.getByRole('button', { name: 'Create' }).click();
      const id = await waitFor(
        async () => one.$$eval('.term-row', (rows) => (rows[0] as HTMLElement | undefined)?.dataset.id),
        15_000,
        'the new terminal',
      );
      await one.locator(`.pane[data-terminal="${id}"]:not([hidden]) .xterm-rows`).waitFor();
      const listed = JSON.parse((await runCli(['ls', '--json'], env)).stdout).terminals;
      const size = listed.find((t: { id: string }) => t.id === id);
      expect(await paneSize(one, id)).toBe(size.rows);
      expectOneAnswerEach(answersIn(await probeFromPage(one, id)), { cols: size.cols, rows: size.rows });

      const two = await openPage();
      await two.locator(`.term-row[data-id="${id}"] button`).first().click();
      await two.locator(`.pane[data-terminal="${id}"]:not([hidden]) .xterm-rows`).waitFor();
      const again = JSON.parse((await runCli(['ls', '--json'], env)).stdout).terminals.find(
        (t: { id: string }) => t.id === id,
      );
      await one.bringToFront();
      // The second run's answers are the last ones on the screen.
      expectOneAnswerEach(answersIn(await probeFromPage(one, id)), { cols: again.cols, rows: again.rows });
    };
  });
});

describe.skipIf(!sshAvailable)('terminal queries over SSH (real sshd)', { timeout: 120_000 }, () => {
  let sshd: SshdInstance;
  let fx: RelayFixture;
  let home: ReturnType<typeof relayHome>;
  let env: NodeJS.ProcessEnv;
  let probe: string;

  beforeAll(async () => {
    home = relayHome();
    sshd = await startSshd({ user: SSH_USER });
    // The host's user runs the probe from its own home.
    probe = join(sshd.userHome, 'query-probe.cjs');
    copyFileSync(PROBE, probe);
    chmodSync(probe, 0o644);
    fx = await startRelay({ config: { hosts: { box: hostFor(sshd) } } });
    env = { ...process.env, PTYRELAY_URL: fx.url, PTYRELAY_TOKEN: TEST_TOKEN, HOME: fx.local.home };
    delete env.PTYRELAY_CLIENT_ID;
  });
  afterAll(async () => {
    await (fx?.router.providerFor('box') as SshPtyProvider | undefined)
      ?.shutdownDaemon('box')
      .catch(() => {});
    await fx?.cleanup();
    await sshd?.stop();
    home?.cleanup();
    spawnSync('userdel', ['-r', SSH_USER], { stdio: 'ignore' });
  });

  it('with no viewer: `ptyrelay run` on the SSH host', async () => {
    const r = await runCli(['run', 'box', '--', 'node', probe, ALL], env);
    expect(r.code, r.stderr).toBe(0);
    expectOneAnswerEach(answersIn(r.stdout), { cols: 120, rows: 40 });
  });
});
