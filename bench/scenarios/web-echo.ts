import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { routerOver } from '../../relay/service/host-router.js';
import { createPtyExtension } from '../../relay/service/pty-extension.js';
import { startRelayServer } from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import { waitFor } from '../../test/support/local-daemon.js';
import { browserMissing, buildWebInto, launchBrowser } from '../../test/support/web-browser.js';
import type { BenchEnv } from '../lib/env.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { now, round, sleep, summarize } from '../lib/util.js';

const TOKEN = 'bench-web-token-0123456789abcdef';
const TARGET_MS = 100;
/** Characters typed per line before Enter (keeps the line short and every sample unique). */
const PER_LINE = 12;

/**
 * In-page clocks: the last keydown, and the first Data frame for the watched terminal after it
 * (so an echo splits into transport — keydown to frame — and the page's own parse and render).
 */
const INSTALL_CLOCKS = () => {
  const w = window as unknown as { __lastKeyAt: number; __frameAt: number; __watch: string };
  w.__frameAt = 0;
  document.addEventListener(
    'keydown',
    () => {
      w.__lastKeyAt = performance.now();
      w.__frameAt = 0;
    },
    true,
  );
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      this.addEventListener('message', (ev) => {
        if (w.__frameAt || !(ev.data instanceof ArrayBuffer) || ev.data.byteLength < 8) return;
        const v = new DataView(ev.data);
        const id = new TextDecoder().decode(
          new Uint8Array(ev.data, 7, Math.min(v.getUint16(5), ev.data.byteLength - 7)),
        );
        if (id === w.__watch) w.__frameAt = performance.now();
      });
    }
  };
};

/** Ms from the last keydown until terminal `id`'s screen contains `text`, and until its frame arrived. */
const WAIT_FOR_TEXT = ([id, text]: [string, string]) =>
  new Promise<[number, number]>((resolve) => {
    const rows = document.querySelector(`.pane[data-terminal="${CSS.escape(id)}"] .xterm-rows`);
    if (!rows) return resolve([-1, -1]);
    const w = window as unknown as { __lastKeyAt: number; __frameAt: number; __watch: string };
    w.__watch = id;
    const seen = () => (rows.textContent ?? '').replace(/\u00a0/g, ' ').includes(text);
    const obs = new MutationObserver(() => {
      if (!seen()) return;
      obs.disconnect();
      resolve([performance.now() - w.__lastKeyAt, w.__frameAt ? w.__frameAt - w.__lastKeyAt : -1]);
    });
    obs.observe(rows, { subtree: true, childList: true, characterData: true });
  });

async function createTerminal(page: Page): Promise<string> {
  const before = new Set(
    await page.$$eval('.term-row', (rs) => rs.map((r) => (r as HTMLElement).dataset.id ?? '')),
  );
  await page.getByRole('button', { name: '+ New terminal' }).click();
  await page.getByRole('dialog', { name: 'New terminal' }).getByRole('button', { name: 'Create' }).click();
  return waitFor(
    async () =>
      (await page.$$eval('.term-row', (rs) => rs.map((r) => (r as HTMLElement).dataset.id ?? ''))).find(
        (x) => !before.has(x),
      ),
    10_000,
    'a new terminal',
  );
}

/** Echo samples in terminal `id`: one keystroke each, timed in the page from keydown to screen. */
async function echoSamples(page: Page, id: string, n: number): Promise<{ total: number[]; frame: number[] }> {
  await page.locator(`.pane[data-terminal="${id}"] .xterm-screen`).click();
  const out: number[] = [];
  const frame: number[] = [];
  let line = '';
  await page.keyboard.type('echo ');
  for (let i = 0; i < n; i++) {
    const ch = String.fromCharCode(97 + (i % 26));
    line += ch;
    const wait = page.evaluate(WAIT_FOR_TEXT, [id, `echo ${line}`] as [string, string]);
    await page.keyboard.press(ch);
    const [total, arrived] = await wait;
    out.push(total);
    if (arrived >= 0) frame.push(arrived);
    if (line.length >= PER_LINE) {
      await page.keyboard.press('Enter');
      await sleep(100);
      await page.keyboard.type('echo ');
      line = '';
    }
    await sleep(30 + Math.random() * 30);
  }
  await page.keyboard.press('Enter');
  return { total: out, frame };
}

/** One run: a relay over a fresh local daemon, two terminals side by side, `yes` in the left one. */
async function run(env: BenchEnv, manualAck: boolean, samples: number, webRoot: string, page: Page) {
  const runtimeDir = join(env.localRoot, `web-${manualAck ? 'manual' : 'auto'}`);
  const local = new LocalPtyProvider({
    runtimeDir,
    log: env.log,
    ...(manualAck ? { link: { manualAck: true } } : {}),
  });
  const router = routerOver({ local });
  const registry = new TerminalRegistry();
  const server = await startRelayServer({
    listen: { host: '127.0.0.1', port: 0 },
    token: TOKEN,
    router,
    registry,
    extensions: [createPtyExtension({ router, registry, log: env.log })],
    log: env.log,
    web: { root: webRoot },
  });
  try {
    await page.goto(`${server.httpUrl}/#token=${TOKEN}`);
    await page.getByText('● connected').waitFor();
    const a = await createTerminal(page);
    const b = await createTerminal(page);
    await page.getByRole('button', { name: 'Split' }).click();
    await sleep(500);
    const idle = await echoSamples(page, b, Math.min(8, samples));
    await page.locator(`.pane[data-terminal="${a}"] .xterm-screen`).click();
    await page.keyboard.type('yes\n');
    await sleep(1500);
    const rate = Number(await page.locator(`.term-row[data-id="${a}"] .activity`).getAttribute('data-rate'));
    const t0 = now();
    const flood = await echoSamples(page, b, samples);
    const floodMs = now() - t0;
    await page.locator(`.pane[data-terminal="${a}"] .xterm-screen`).click();
    await page.keyboard.press('Control+C');
    return { idle, flood, rate, floodMs };
  } finally {
    await server.close();
    await local.shutdownDaemon().catch(() => {});
    await local.dispose();
  }
}

/**
 * Input echo in one terminal of the web page while another, side by side, floods with `yes`:
 * from the keydown in Chromium to the character on the other terminal's screen. The page
 * acknowledges output as xterm parses it, so the flood must not delay the other terminal.
 */
export async function webEchoScenario(env: BenchEnv): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  const missing = browserMissing();
  if (missing) return { name: 'web', rows, details, errors: [`skipped: ${missing}`], durationMs: 0 };
  const browser = await launchBrowser({ width: 1400, height: 800 });
  try {
    const webRoot = buildWebInto(browser.dir);
    const page = await browser.page();
    await page.addInitScript(INSTALL_CLOCKS);
    const samples = env.opts.quick ? 15 : 60;
    // Quick runs measure the default router only (hosts credit on delivery; the page pauses).
    for (const manualAck of env.opts.quick ? [false] : [false, true]) {
      const label = manualAck ? 'page-driven credit' : 'relay credits on delivery';
      try {
        const r = await run(env, manualAck, samples, webRoot, page);
        const f = summarize(r.flood.total);
        const idle = summarize(r.idle.total);
        const transport = summarize(r.flood.frame);
        details[manualAck ? 'manualAck' : 'autoAck'] = {
          floodEchoMs: r.flood.total.map((x) => round(x, 1)),
          floodEchoFrameArrivalMs: r.flood.frame.map((x) => round(x, 1)),
          idleEchoMs: r.idle.total.map((x) => round(x, 1)),
          idleEchoFrameArrivalMs: r.idle.frame.map((x) => round(x, 1)),
          floodRateBytesPerSec: r.rate,
        };
        for (const [metric, v] of [
          ['echo p50', f.p50],
          ['echo p90', f.p90],
          ['echo max', f.max],
        ] as const) {
          rows.push({
            scenario: 'web',
            metric: `${metric} in another terminal during yes (${label})`,
            unit: 'ms',
            subject: 'web page (Chromium)',
            value: round(v, 1),
            reference: { label: 'no flood', value: round(metric === 'echo max' ? idle.max : idle.p50, 1) },
            better: 'lower',
            target: metric === 'echo max' ? undefined : { text: `< ${TARGET_MS} ms`, met: v < TARGET_MS },
            note: `flood shown at ${round(r.rate / 1e6, 2)} MB/s meanwhile; the echo's frame reached the page after ${round(transport.p50, 1)} ms (p50)`,
          });
        }
      } catch (err) {
        errors.push(`${label}: ${(err as Error).message}`);
      }
    }
  } finally {
    await browser.close();
  }
  return { name: 'web', rows, details, errors, durationMs: now() - t0 };
}
