/**
 * A cheap look at a chunk of output for something that may be a terminal query (a CSI ending in
 * c, n, p, q, t or u; an OSC colour number; a DCS ending in q), so the model parses up to it at
 * once and its answer is not held back by the feed's batching (SETTLE_MS, a flood's lazy feed).
 * A false positive only costs an early flush; the model decides what is a query. In a large chunk
 * (a flood) only the end is looked at: a program that asks waits for the answer, so its query
 * ends its output; one inside a flood is answered when the model reaches it.
 */

import { CSI_QUERY_FINAL_BYTES } from '../../provider/terminal-queries.js';

const ESC = 0x1b;
/** Chunks above this are looked at only in their last TAIL_BYTES. */
const FULL_SCAN_BYTES = 16 * 1024;
const TAIL_BYTES = 256;
/** Longest CSI looked at. */
const MAX_CSI_BYTES = 32;

/** True when `data` may hold a terminal query. */
export function mayEndWithQuery(data: Uint8Array): boolean {
  let i = data.length > FULL_SCAN_BYTES ? data.length - TAIL_BYTES : 0;
  while (true) {
    i = data.indexOf(ESC, i);
    if (i < 0) return false;
    const kind = data[i + 1];
    if (kind === 0x5b && csiMayAsk(data, i + 2)) return true;
    // OSC 4 / 1x (colours) and DCS (DECRQSS, XTGETTCAP): the model looks closer.
    if (kind === 0x5d && (data[i + 2] === 0x31 || data[i + 2] === 0x34)) return true;
    if (kind === 0x50) return true;
    i++;
  }
}

/** Whether the CSI whose parameters start at `from` ends in a query's final byte. */
function csiMayAsk(data: Uint8Array, from: number): boolean {
  const end = Math.min(data.length, from + MAX_CSI_BYTES);
  for (let j = from; j < end; j++) {
    const b = data[j];
    if (b >= 0x40 && b <= 0x7e) return CSI_QUERY_FINAL_BYTES.has(b);
  }
  return false;
}
