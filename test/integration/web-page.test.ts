import { rmSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../support/fault-proxy.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import {
  ARTIFACTS_DIR,
  artifactPath,
  browserAvailable,
  buildWebInto,
  createTerminal,
  launchBrowser,
  screenText,
  type TestBrowser,
  terminalIds,
  waitForScreen,
} from '../support/web-browser.js';

const available = browserAvailable();

/** Types a line into terminal `id` (its pane takes the focus first). */
async function typeLine(page: Page, id: string, line: string): Promise<void> {
  await page.locator(`.pane[data-terminal="${id}"] .xterm-screen`).click();
  await page.keyboard.type(line);
  await page.keyboard.press('Enter');
}

const lines = (s: string) => s.split('\n');

describe.skipIf(!available)('web page in headless Chromium', () => {
  let fx: RelayFixture;
  let proxy: FaultProxy;
  let browser: TestBrowser;
  let page: Page;
  let base: string;
  const origins: string[] = [];
  const requested: string[] = [];
  const cspViolations: string[] = [];

  beforeAll(async () => {
    browser = await launchBrowser();
    const webRoot = buildWebInto(browser.dir);
    // The page is loaded through a fault proxy so the test can cut its WebSocket; the proxy's
    // origin is allowed once its port is known.
    fx = await startRelay({ manualAck: true, server: { web: { root: webRoot }, allowedOrigins: origins } });
    proxy = await FaultProxy.start({ host: '127.0.0.1', port: fx.port });
    base = `http://127.0.0.1:${proxy.port}`;
    origins.push(base);
    rmSync(ARTIFACTS_DIR, { recursive: true, force: true });
    console.log(`web page screenshots: ${ARTIFACTS_DIR}`);
    page = await browser.page();
    page.on('request', (r) => requested.push(r.url()));
    page.on('console', (m) => {
      if (/Content.Security.Policy|Refused to/i.test(m.text())) cspViolations.push(m.text());
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await proxy?.close();
    await fx?.cleanup();
  });

  it('opens with the token from the fragment, which leaves the address bar and every request', async () => {
    const res = await page.goto(`${base}/#token=${TEST_TOKEN}`);
    expect(res?.status()).toBe(200);
    const headers = res!.headers();
    expect(headers['cache-control']).toContain('no-cache');
    expect(headers['content-security-policy']).toMatch(/script-src 'self';/);
    expect(headers['content-security-policy']).not.toMatch(/script-src[^;]*unsafe/);
    await page.getByText('● connected').waitFor();
    expect(page.url()).toBe(`${base}/`);
    expect(await page.evaluate(() => sessionStorage.getItem('ptyrelay.token'))).toBe(TEST_TOKEN);
    expect(requested.some((u) => u.includes(TEST_TOKEN))).toBe(false);
    const asset = requested.find((u) => /\/assets\/app-[A-Z0-9]+\.js$/.test(u));
    expect(asset).toBeDefined();
    const assetRes = await page.request.get(asset!);
    expect(assetRes.headers()['cache-control']).toBe('public, max-age=31536000, immutable');
    // The relay's own host shows with its link state.
    await expect.poll(() => page.locator('.host-row[data-host="local"]').count()).toBe(1);
  });

  it('creates a terminal on local, types `echo hi` and shows hi', async () => {
    const id = await createTerminal(page);
    expect(id).toMatch(/^local\//);
    await typeLine(page, id, 'echo hi');
    const screen = await waitForScreen(page, id, (s) => lines(s).some((l) => l.trim() === 'hi'));
    expect(screen).toContain('echo hi');
    await page.screenshot({ path: artifactPath('terminal.png') });
  });

  it('shows a failing command and its exit status in the list', async () => {
    const id = (await terminalIds(page))[0]!;
    await typeLine(page, id, "sh -c 'exit 3'");
    const status = page.locator(`.term-row[data-id="${id}"] .cmd .status.fail`);
    await status.waitFor({ timeout: 10_000 });
    expect(await status.getAttribute('data-exit')).toBe('3');
    expect(await page.locator(`.term-row[data-id="${id}"] .cmd code`).textContent()).toBe("sh -c 'exit 3'");
    await typeLine(page, id, 'true');
    await page.locator(`.term-row[data-id="${id}"] .cmd .status.ok`).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: artifactPath('overview.png') });
  });

  it('shows the same screen after its WebSocket is dropped, and output made meanwhile exactly once', async () => {
    const id = (await terminalIds(page))[0]!;
    await typeLine(page, id, 'clear; seq 1 5');
    const before = await waitForScreen(page, id, (s) => /^5$/m.test(s) && /[$#] ?$/.test(s));
    // Output produced while the page is cut off must arrive exactly once.
    await typeLine(page, id, 'sleep 1; echo during-the-drop');
    await new Promise((r) => setTimeout(r, 150));
    const cutScreen = await screenText(page, id);
    proxy.refuse(true);
    proxy.cut();
    await page.locator('.banner', { hasText: 'Reconnecting' }).waitFor({ timeout: 5000 });
    expect(await page.locator('.host-row').count()).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 1500));
    proxy.refuse(false);
    await page.locator('.banner').waitFor({ state: 'hidden', timeout: 15_000 });
    const after = await waitForScreen(page, id, (s) => s.includes('during-the-drop') && /[$#] ?$/.test(s));
    expect(lines(after).filter((l) => l === 'during-the-drop')).toHaveLength(1);
    // Everything shown before the cut is still there, unchanged, above the new output.
    expect(after.startsWith(cutScreen.trimEnd())).toBe(true);
    expect(after.startsWith(before)).toBe(true);
    // A second drop with nothing new: the screen is identical.
    const settled = await screenText(page, id);
    proxy.cut();
    await page
      .locator('.banner')
      .waitFor({ state: 'visible', timeout: 5000 })
      .catch(() => undefined);
    await page.locator('.banner').waitFor({ state: 'hidden', timeout: 15_000 });
    await page.getByText('● connected').waitFor();
    expect(await screenText(page, id)).toBe(settled);
    // Input still works after the reconnects.
    await typeLine(page, id, 'echo back-again');
    await waitForScreen(page, id, (s) => lines(s).includes('back-again'));
  }, 60_000);

  it('keeps another terminal responsive while one floods with yes (split view)', async () => {
    const [a] = await terminalIds(page);
    const b = await createTerminal(page);
    await page.getByRole('button', { name: 'Split' }).click();
    await page
      .locator('.panes.split')
      .waitFor({ timeout: 15_000 })
      .catch(async (err) => {
        await page.screenshot({ path: artifactPath('split-failed.png') });
        throw err;
      });
    expect(await page.locator('.pane:not([hidden])').count()).toBe(2);
    // Each terminal is fitted to its half. The one shown again used to keep the width of its
    // foreground snapshot (its size before the split): its screen then ran under the pane's
    // scrollbar, where a click on the screen's centre landed during the flood below.
    await waitFor(
      async () => {
        for (const id of [a!, b]) {
          const pane = await page.locator(`.pane[data-terminal="${id}"]`).boundingBox();
          const screen = await page.locator(`.pane[data-terminal="${id}"] .xterm-screen`).boundingBox();
          if (!pane || !screen || screen.x + screen.width > pane.x + pane.width + 1) return false;
        }
        return true;
      },
      15_000,
      'both terminals fitted to their panes after the split',
    );
    await typeLine(page, a!, 'yes');
    // The flood is visible in the overview as an output rate.
    await waitFor(
      async () =>
        Number(await page.locator(`.term-row[data-id="${a}"] .activity`).getAttribute('data-rate')) > 50_000,
      10_000,
      'flood rate',
    );
    for (let i = 0; i < 5; i++) {
      await typeLine(page, b, `echo marker-${i}`);
      await waitForScreen(page, b, (s) => lines(s).includes(`marker-${i}`), 5000);
    }
    // A bell in a terminal not in view shows as a badge until that terminal is looked at.
    await typeLine(page, b, "sleep 3; printf '\\a'");
    await page.locator(`.pane[data-terminal="${a}"] .xterm-screen`).click();
    await page.locator(`.term-row[data-id="${b}"] .bell`, { hasText: '1' }).waitFor({ timeout: 30_000 });
    // The page's main thread answers promptly while the flood runs.
    const t0 = Date.now();
    await page.evaluate(() => 1);
    expect(Date.now() - t0).toBeLessThan(2000);
    // Hidden, the flooding terminal goes to the background; shown again, it is redrawn from a snapshot.
    await page.getByRole('button', { name: 'Split' }).click();
    await page.locator(`.tab[data-tab="${b}"] [role=tab]`).click();
    await page.locator(`.pane[data-terminal="${a}"]`).waitFor({ state: 'hidden' });
    expect(await page.locator(`.term-row[data-id="${b}"] .bell`).count()).toBe(0);
    await new Promise((r) => setTimeout(r, 1500));
    await page.locator(`.tab[data-tab="${a}"] [role=tab]`).click();
    await waitForScreen(page, a!, (s) => lines(s).filter((l) => l === 'y').length > 10, 30_000);
    await page.locator(`.pane[data-terminal="${a}"] .xterm-screen`).click();
    await page.keyboard.press('Control+C');
    // Hidden again, the terminal runs free in the background: the interrupted command's status
    // reaches the list from the background stream, and showing it redraws the final screen.
    await page.locator(`.tab[data-tab="${b}"] [role=tab]`).click();
    await page
      .locator(`.term-row[data-id="${a}"] .cmd .status.fail[data-exit="130"]`)
      .waitFor({ timeout: 30_000 });
    await page.locator(`.tab[data-tab="${a}"] [role=tab]`).click();
    await waitForScreen(page, a!, (s) => /\^C/.test(s) && /[$#] ?$/.test(s), 30_000);
    await page.screenshot({ path: artifactPath('after-flood.png') });
  }, 240_000);

  it('lays out in one column with an on-screen key row at 390×844', async () => {
    const phone = await browser.context.newPage();
    try {
      await phone.setViewportSize({ width: 390, height: 844 });
      // Session storage is per tab: a new tab brings the token in its fragment again.
      await phone.goto(`${base}/#token=${TEST_TOKEN}`);
      await phone.getByText('● connected').waitFor();
      const ids = await terminalIds(phone);
      expect(ids.length).toBeGreaterThan(0);
      // One column: the list spans the width, the terminal area is not shown beside it.
      const list = await phone.locator('.overview').boundingBox();
      expect(list!.width).toBeGreaterThan(370);
      expect(await phone.locator('.workspace').isVisible()).toBe(false);
      await phone.screenshot({ path: artifactPath('phone-overview.png') });
      await phone.locator(`.term-row[data-id="${ids[0]}"] button`).click();
      await phone.locator('.keybar').waitFor();
      expect(await phone.locator('.overview').isVisible()).toBe(false);
      for (const k of [
        'Escape',
        'Control (applies to the next key)',
        'Tab',
        'Left arrow',
        'Up arrow',
        'Down arrow',
        'Right arrow',
      ]) {
        expect(await phone.getByRole('button', { name: k, exact: true }).isVisible()).toBe(true);
      }
      const pane = await phone.locator(`.pane[data-terminal="${ids[0]}"]`).boundingBox();
      expect(pane!.width).toBeGreaterThan(350);
      // The on-screen Up arrow recalls the last command from the shell's history.
      await phone.locator(`.pane[data-terminal="${ids[0]}"] .xterm-screen`).click();
      await phone.keyboard.type('echo phone-ok');
      await phone.keyboard.press('Enter');
      await waitForScreen(phone, ids[0]!, (s) => lines(s).includes('phone-ok'));
      await phone.getByRole('button', { name: 'Up arrow', exact: true }).click();
      await waitForScreen(phone, ids[0]!, (s) => /[$#] echo phone-ok$/.test(s));
      await phone.screenshot({ path: artifactPath('phone-terminal.png') });
    } finally {
      await phone.close();
    }
  }, 60_000);

  it('gives a new terminal the focus at once: keys typed while the link is slow reach it', async () => {
    // 150 ms each way: telling the relay which panes are in the background takes two round trips
    // (600 ms) after the new pane shows. The focus used to wait for them, and what was typed
    // meanwhile went to the page, not to the terminal.
    proxy.delay(150);
    try {
      const id = await createTerminal(page);
      await page.keyboard.type('echo focus-$((40+2))');
      await page.keyboard.press('Enter');
      await waitForScreen(page, id, (s) => lines(s).includes('focus-42'), 20_000);
    } finally {
      proxy.restore();
    }
  }, 60_000);

  it('creates, renames, signals and closes a terminal with the keyboard only', async () => {
    const before = new Set(await terminalIds(page));
    await page.locator('body').click({ position: { x: 5, y: 300 } });
    await page.keyboard.press('Alt+Shift+N');
    const dialog = page.getByRole('dialog', { name: 'New terminal' });
    await dialog.waitFor();
    await page.keyboard.press('Tab'); // host → command
    await page.keyboard.type('bash');
    await page.keyboard.press('Enter');
    const id = await waitFor(
      async () => (await terminalIds(page)).find((x) => !before.has(x)),
      10_000,
      'new row',
    );
    await page.locator(`.pane[data-terminal="${id}"]:not([hidden]) .xterm-rows`).waitFor();
    // Typing goes to the new terminal, which has the focus.
    await page.keyboard.type('sleep 100');
    await page.keyboard.press('Enter');
    await page.locator(`.term-row[data-id="${id}"] .cmd .status.running`).waitFor({ timeout: 10_000 });
    // Signal: the toolbar's select and button, reached from the page (focus leaves xterm with a click on the toolbar).
    await page.getByRole('combobox', { name: 'Signal to send' }).selectOption('SIGINT');
    await page.getByRole('button', { name: 'Send signal' }).focus();
    await page.keyboard.press('Enter');
    await page
      .locator(`.term-row[data-id="${id}"] .cmd .status.fail[data-exit="130"]`)
      .waitFor({ timeout: 10_000 });
    // Rename.
    await page.getByRole('button', { name: 'Rename' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'Rename terminal' }).waitFor();
    await page.keyboard.press('Control+A');
    await page.keyboard.type('build box');
    await page.keyboard.press('Enter');
    await page.locator(`.term-row[data-id="${id}"] .term-title`, { hasText: 'build box' }).waitFor();
    expect(await page.locator(`.tab[data-tab="${id}"] [role=tab]`).textContent()).toContain('build box');
    // Close: the terminal leaves the relay's list.
    await page.getByRole('button', { name: 'Close terminal' }).focus();
    await page.keyboard.press('Enter');
    await waitFor(async () => !(await terminalIds(page)).includes(id), 30_000, 'row removed');
    expect(fx.registry.find(id)).toBeUndefined();
  }, 60_000);

  it('ran without Content-Security-Policy violations', () => {
    expect(cspViolations).toEqual([]);
  });
});
