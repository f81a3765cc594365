import type { Page } from 'playwright-core';
import { decodePng, type RgbaImage } from './png-image.js';

/** A character's box on the page in CSS pixels (the page is shot at device scale 1). */
export interface CharBox {
  ch: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Where a character's ink lies in its box: rows relative to the box top, widest stroke in pixels. */
export interface CharInk {
  ch: string;
  /** First and last pixel row with ink, or undefined when the box has none. */
  top: number | undefined;
  bottom: number | undefined;
  /** Pixel rows with ink. */
  rows: number;
  /** The most ink pixels on one row (an underscore is one long row). */
  widest: number;
  /** The box's height in pixels. */
  height: number;
}

/**
 * A pixel counts as ink when one channel differs from the background by this much: anti-aliased
 * edges below it come and go with the glyph's sub-pixel position, strokes are far above it.
 */
const INK_THRESHOLD = 64;

/**
 * Screenshots the area around `boxes` and reports each box's ink. `background` is the colour the
 * boxes are drawn on, as `#rrggbb`.
 */
export async function shootInk(page: Page, boxes: CharBox[], background: string): Promise<CharInk[]> {
  const left = Math.floor(Math.min(...boxes.map((b) => b.x)));
  const top = Math.floor(Math.min(...boxes.map((b) => b.y)));
  const right = Math.ceil(Math.max(...boxes.map((b) => b.x + b.width)));
  const bottom = Math.ceil(Math.max(...boxes.map((b) => b.y + b.height)));
  const img = decodePng(
    await page.screenshot({ clip: { x: left, y: top, width: right - left, height: bottom - top } }),
  );
  const bg = [1, 3, 5].map((i) => Number.parseInt(background.slice(i, i + 2), 16));
  return boxes.map((b) => inkIn(img, bg, { ...b, x: b.x - left, y: b.y - top }));
}

function inkIn(img: RgbaImage, bg: number[], box: CharBox): CharInk {
  const x0 = Math.round(box.x);
  const x1 = Math.round(box.x + box.width);
  const y0 = Math.round(box.y);
  const y1 = Math.round(box.y + box.height);
  const out: CharInk = { ch: box.ch, top: undefined, bottom: undefined, rows: 0, widest: 0, height: y1 - y0 };
  for (let y = y0; y < y1; y++) {
    let n = 0;
    for (let x = x0; x < x1; x++) {
      const i = (y * img.width + x) * 4;
      const d = Math.max(...[0, 1, 2].map((c) => Math.abs(img.data[i + c]! - bg[c]!)));
      if (d >= INK_THRESHOLD) n++;
    }
    if (n === 0) continue;
    out.top ??= y - y0;
    out.bottom = y - y0;
    out.rows++;
    out.widest = Math.max(out.widest, n);
  }
  return out;
}

/** `inks` as text, one character a line, for failure messages. */
export function describeInk(inks: CharInk[]): string {
  return inks
    .map((k) => `${JSON.stringify(k.ch)}: rows ${k.top}..${k.bottom} of ${k.height}, widest ${k.widest}`)
    .join('\n');
}
