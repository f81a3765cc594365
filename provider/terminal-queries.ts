/**
 * Terminal queries — what a program asks the terminal about itself (device attributes, the
 * cursor, modes, colours, the version, the size) — are answered by the host's stub, once, from
 * its screen model (docs/architecture.md, "Terminal queries"). Viewers must not answer: this file
 * holds what both sides share: which sequences are queries, the colours the stub reports, and
 * its version string. Node 18 and browsers: no imports of Node modules.
 */

/** The product's version (package.json's; a unit test keeps them equal). */
export const PTYRELAY_VERSION = '0.1.0';

/** The colours OSC 10/11/12 report: `#rrggbb`. */
export interface TerminalPalette {
  foreground: string;
  background: string;
  cursor: string;
}

/** What the stub reports unless the relay config sets `terminal.palette`: the web page's theme. */
export const DEFAULT_PALETTE: TerminalPalette = {
  foreground: '#d8dee9',
  background: '#0f1419',
  cursor: '#f0c674',
};

/** `#rrggbb` → `rgb:rrrr/gggg/bbbb`, the form xterm answers OSC colour queries in. */
export function xtermRgb(hex: string): string {
  const h = hex.replace(/^#/, '');
  const part = (i: number) => h.slice(i, i + 2).repeat(2);
  return `rgb:${part(0)}/${part(2)}/${part(4)}`;
}

/** XTVERSION's answer: `DCS > | ptyrelay(VERSION) ST`. */
export const XTVERSION_REPLY = `\x1bP>|ptyrelay(${PTYRELAY_VERSION})\x1b\\`;

/**
 * CSI sequences that ask and never change what is displayed, by `prefix + intermediates +
 * final`: DA1 (`c`), DA2 (`>c`), DA3 (`=c`), DSR and CPR (`n`, `?n`), DECRQM (`$p`, `?$p`),
 * XTVERSION (`>q`), the kitty keyboard flags (`?u`). Window reports (`t` with 11, 13–16, 18–21)
 * are checked by their first parameter.
 */
/** The final bytes a CSI query can end in (c n p q t u): any other CSI is not a query. */
export const CSI_QUERY_FINAL_BYTES: ReadonlySet<number> = new Set([0x63, 0x6e, 0x70, 0x71, 0x74, 0x75]);
const CSI_QUERIES = new Set(['c', '>c', '=c', 'n', '?n', '$p', '?$p', '>q', '?u']);
const WINDOW_REPORTS = new Set([11, 13, 14, 15, 16, 18, 19, 20, 21]);
/** OSC colour numbers whose `?` asks for the colour (4: palette, 10–19: dynamic colours). */
const OSC_COLOURS = new Set([4, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);

/** True when a CSI sequence (its private prefix, intermediates, final and first parameter) is a query. */
export function isCsiQuery(prefix: string, intermediates: string, final: string, first: number): boolean {
  if (final === 't' && prefix === '' && intermediates === '') return WINDOW_REPORTS.has(first);
  return CSI_QUERIES.has(prefix + intermediates + final);
}

/** True when an OSC payload (`10;?`, `4;1;?`) asks for a colour. */
export function isOscQuery(payload: string): boolean {
  const semi = payload.indexOf(';');
  const ps = Number(semi < 0 ? payload : payload.slice(0, semi));
  return (
    OSC_COLOURS.has(ps) &&
    payload
      .slice(semi + 1)
      .split(';')
      .includes('?')
  );
}

/** True when a DCS sequence asks: DECRQSS (`$q`) and XTGETTCAP (`+q`). */
export function isDcsQuery(intermediates: string, final: string): boolean {
  return final === 'q' && (intermediates === '$' || intermediates === '+');
}
