import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CharBox, type CharInk, describeInk, shootInk } from '../support/glyph-ink.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import {
  artifactPath,
  browserAvailable,
  buildWebInto,
  createTerminal,
  launchBrowser,
  type TestBrowser,
  waitForScreen,
} from '../support/web-browser.js';

const available = browserAvailable();

/** The terminal's background (THEME.background in web/terminal-pane.ts). */
const BACKGROUND = '#0f1419';

/**
 * Lines whose glyphs reach the bottom of their cells (the underscore, descenders, brackets, the
 * bar) or the top (accented capitals).
 */
const SAMPLES = ['a_b_c', 'gjpqy_|', '__[]{}()', 'ÅÉÎÑÖ$@'];

/** `printf`'s format for the samples, one a line: bytes past ASCII as octal escapes, so the shell's locale does not matter. */
const PRINTF_FORMAT = Array.from(Buffer.from(SAMPLES.map((s) => `${s}\\n`).join('')), (b) =>
  b < 0x80 ? String.fromCharCode(b) : `\\${b.toString(8)}`,
).join('');

/**
 * The box of every character of the terminal row that reads `text` (DOM renderer): its cell's
 * width and the row's full height, which the renderer clips to.
 */
async function rowBoxes(page: Page, id: string, text: string): Promise<CharBox[]> {
  return page.evaluate(
    ([tid, want]) => {
      const rows = document.querySelector(`.pane[data-terminal="${CSS.escape(tid!)}"] .xterm-rows`);
      const row = Array.from(rows?.children ?? []).find(
        (r) => (r.textContent ?? '').replace(/\u00a0/g, ' ').trimEnd() === want,
      );
      if (!row) throw new Error(`no row reads ${want}`);
      const rowRect = row.getBoundingClientRect();
      const boxes: { ch: string; x: number; y: number; width: number; height: number }[] = [];
      const walker = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node && boxes.length < want!.length; node = walker.nextNode()) {
        for (let i = 0; i < node.textContent!.length && boxes.length < want!.length; i++) {
          const range = document.createRange();
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const r = range.getBoundingClientRect();
          boxes.push({
            ch: want![boxes.length]!,
            x: r.x,
            y: rowRect.y,
            width: r.width,
            height: rowRect.height,
          });
        }
      }
      return boxes;
    },
    [id, text],
  );
}

/**
 * The ink of the same text in the terminal's font and colour, unclipped (a tall line, no
 * overflow), drawn for a moment over the page's corner: how each glyph looks whole.
 */
async function referenceInk(page: Page, id: string, text: string): Promise<CharInk[]> {
  const boxes = await page.evaluate(
    ([tid, want, bg]) => {
      const rows = document.querySelector(`.pane[data-terminal="${CSS.escape(tid!)}"] .xterm-rows`)!;
      const style = getComputedStyle(rows);
      document.getElementById('glyph-reference')?.remove();
      const ref = document.createElement('pre');
      ref.id = 'glyph-reference';
      Object.assign(ref.style, {
        position: 'fixed',
        left: '0',
        top: '0',
        zIndex: '1000',
        margin: '0',
        padding: '0 8px',
        fontFamily: style.fontFamily,
        fontSize: style.fontSize,
        lineHeight: '3',
        color: style.color,
        background: bg,
        fontKerning: 'none',
      });
      ref.textContent = want!;
      document.body.append(ref);
      const node = ref.firstChild!;
      const box = ref.getBoundingClientRect();
      return Array.from(want!, (ch, i) => {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const r = range.getBoundingClientRect();
        return { ch, x: r.x, y: box.y, width: r.width, height: box.height };
      });
    },
    [id, text, BACKGROUND],
  );
  const ink = await shootInk(page, boxes, BACKGROUND);
  await page.evaluate(() => document.getElementById('glyph-reference')?.remove());
  return ink;
}

/** The fonts Chromium drew the terminal's text with (DevTools' CSS.getPlatformFontsForNode). */
async function fontsDrawn(page: Page, id: string): Promise<string[]> {
  const cdp = await page.context().newCDPSession(page);
  try {
    await cdp.send('DOM.enable');
    await cdp.send('CSS.enable');
    const { root } = await cdp.send('DOM.getDocument', { depth: -1 });
    const { nodeIds } = await cdp.send('DOM.querySelectorAll', {
      nodeId: root.nodeId,
      selector: `.pane[data-terminal="${id}"] .xterm-rows span`,
    });
    const names = new Set<string>();
    for (const nodeId of nodeIds) {
      const { fonts } = await cdp.send('CSS.getPlatformFontsForNode', { nodeId });
      for (const f of fonts) names.add(f.familyName);
    }
    return [...names];
  } finally {
    await cdp.detach();
  }
}

/** Opens the page, makes a terminal and prints the samples in it; returns the terminal's id. */
async function printSamples(page: Page, base: string): Promise<string> {
  await page.goto(`${base}/#token=${TEST_TOKEN}`);
  await page.getByText('● connected').waitFor();
  const id = await createTerminal(page);
  await page.locator(`.pane[data-terminal="${id}"] .xterm-screen`).click();
  await page.keyboard.type(`clear; printf '${PRINTF_FORMAT}'`);
  await page.keyboard.press('Enter');
  await waitForScreen(page, id, (s) => SAMPLES.every((l) => s.split('\n').includes(l)));
  return id;
}

const cellsOf = (inks: CharInk[], ch: string) => inks.filter((k) => k.ch === ch);

describe.skipIf(!available)('glyphs on the web page in headless Chromium', () => {
  let browser: TestBrowser;
  let fx: RelayFixture;
  let base: string;

  beforeAll(async () => {
    browser = await launchBrowser();
    const root = buildWebInto(browser.dir);
    fx = await startRelay({ manualAck: true, server: { web: { root } } });
    base = fx.url.replace(/^ws/, 'http');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await fx?.cleanup();
  });

  for (const [name, viewport] of [
    ['desktop', { width: 1280, height: 800 }],
    ['phone', { width: 390, height: 844 }],
  ] as const) {
    it(`draws underscores and every glyph whole at the default font and size (${name}, ${viewport.width}×${viewport.height})`, async () => {
      const page = await browser.context.newPage();
      try {
        await page.setViewportSize(viewport);
        const id = await printSamples(page, base);
        await page.screenshot({ path: artifactPath(`glyphs-${name}.png`) });
        // The font the page names, installed by .ci/run: what these pixels are measured in.
        expect(await fontsDrawn(page, id)).toEqual(['DejaVu Sans Mono']);
        for (const text of SAMPLES) {
          const shown = await shootInk(page, await rowBoxes(page, id, text), BACKGROUND);
          const whole = await referenceInk(page, id, text);
          const report = `terminal row:\n${describeInk(shown)}\nunclipped:\n${describeInk(whole)}`;
          // The underscores are there: a long stroke in the lower half of their cells.
          for (const k of cellsOf(shown, '_')) {
            expect(k.top ?? -1, report).toBeGreaterThanOrEqual(k.height / 2);
            expect(k.widest, report).toBeGreaterThanOrEqual(6);
          }
          // No glyph loses rows of ink to its row's clip.
          expect(
            shown.map((k) => `${k.ch} ${k.rows}`),
            report,
          ).toEqual(whole.map((k) => `${k.ch} ${k.rows}`));
        }
      } finally {
        await page.close();
      }
    }, 60_000);
  }
});
