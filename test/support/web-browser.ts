import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { packageRoot } from '../../relay/core/stub-bundle.js';
import { capability } from './capabilities.js';
import { waitFor } from './local-daemon.js';

/** Debian's Chromium; no test downloads a browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** Screenshots of the web tests: `test-artifacts/web/` in the repo (ignored by git). */
export const ARTIFACTS_DIR = join(packageRoot(), 'test-artifacts', 'web');

/** Why browser tests cannot run here, or undefined when they can. */
export function browserMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is not installed (apt-get install chromium)`;
}

/** Capability `chromium`: whether the browser tests can run (else prints why, or throws when required). */
export function browserAvailable(): boolean {
  return capability('chromium', browserMissing());
}

/** Builds the page from web/ into a temporary directory (the test serves what the sources say now). */
export function buildWebInto(dir: string): string {
  const out = join(dir, 'web');
  const r = spawnSync(process.execPath, [join(packageRoot(), 'scripts', 'build-web.mjs'), '--out', out], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`web build failed: ${r.stderr || r.stdout}`);
  return out;
}

export interface TestBrowser {
  context: BrowserContext;
  dir: string;
  page(): Promise<Page>;
  /** Closes the browser (all its processes) and removes its profile. */
  close(): Promise<void>;
}

/** Headless Chromium with a fresh profile in a temporary directory. */
export async function launchBrowser(viewport = { width: 1280, height: 800 }): Promise<TestBrowser> {
  const dir = mkdtempSync(join(tmpdir(), 'ptr-web-'));
  const profile = join(dir, 'profile');
  mkdirSync(profile);
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    dir,
    async page() {
      return context.pages()[0] ?? (await context.newPage());
    },
    async close() {
      await context.close();
      rmSync(dir, { recursive: true, force: true });
      const left = processesMentioning(profile);
      if (left.length > 0) throw new Error(`browser processes left behind: ${left.join(', ')}`);
    },
  };
}

/** Pids whose command line contains `text` (Linux /proc). */
function processesMentioning(text: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue; // the process ended meanwhile
    }
    if (cmd.includes(text)) out.push(Number(pid));
  }
  return out;
}

/** The visible rows of a terminal pane as text (xterm's DOM renderer), trailing blanks trimmed. */
export async function screenText(page: Page, id: string): Promise<string> {
  return page.evaluate((tid) => {
    const rows = document.querySelector(`.pane[data-terminal="${CSS.escape(tid)}"] .xterm-rows`);
    if (!rows) return '';
    return Array.from(rows.children)
      .map((r) => (r.textContent ?? '').replace(/\u00a0/g, ' ').trimEnd())
      .join('\n')
      .trimEnd();
  }, id);
}

/** Polls the screen of `id` until `pred` holds; returns that screen. */
export async function waitForScreen(
  page: Page,
  id: string,
  pred: (text: string) => boolean,
  timeoutMs = 10_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    last = await screenText(page, id);
    if (pred(last)) return last;
    if (Date.now() > deadline) throw new Error(`screen of ${id} never matched; it shows:\n${last}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  return join(ARTIFACTS_DIR, name);
}

/** Ids of the terminal rows in the overview, in order. */
export async function terminalIds(page: Page): Promise<string[]> {
  return page.$$eval('.term-row', (rows) => rows.map((r) => (r as HTMLElement).dataset.id ?? ''));
}

/** Creates a terminal through the page's form; returns its id. */
export async function createTerminal(page: Page, opts: { command?: string } = {}): Promise<string> {
  const before = new Set(await terminalIds(page));
  await page.getByRole('button', { name: '+ New terminal' }).click();
  const dialog = page.getByRole('dialog', { name: 'New terminal' });
  await dialog.locator('select[name=host]').selectOption('local');
  if (opts.command) await dialog.locator('input[name=command]').fill(opts.command);
  await dialog.getByRole('button', { name: 'Create' }).click();
  const id = await waitFor(
    async () => (await terminalIds(page)).find((x) => !before.has(x)),
    10_000,
    'new row',
  );
  await page.locator(`.pane[data-terminal="${id}"]:not([hidden]) .xterm-rows`).waitFor();
  return id;
}
