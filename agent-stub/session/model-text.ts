import type xtermHeadless from '@xterm/headless';

type Term = InstanceType<typeof xtermHeadless.Terminal>;

/** `ESC [ params final` as stored by the row encoder: SGR (m), erase (X), cursor forward (C). */
const STORED_CSI = /\x1b\[([0-9;:]*)([A-Za-z])/g;

/** One stored row's VT text as plain text: forward moves become spaces, other sequences go. */
export function storedRowText(vt: string): string {
  return vt.replace(STORED_CSI, (_m, params: string, final: string) =>
    final === 'C' ? ' '.repeat(Math.max(1, Number.parseInt(params, 10) || 1)) : '',
  );
}

/**
 * The model's text as plain logical lines, oldest first: the compact store's rows older than the
 * emulator's own (`storedVt`, rows joined by CRLF and soft-wrapped rows already joined), the
 * emulator's normal-buffer scrollback, then the active screen (the alternate one while a
 * full-screen program runs). Trailing blanks are trimmed and empty lines at the end dropped.
 */
export function modelPlainLines(storedVt: string, term: Term): string[] {
  const out: string[] = storedVt === '' ? [] : storedVt.split('\r\n').map(storedRowText);
  let cur: string | undefined;
  const row = (line: ReturnType<Term['buffer']['active']['getLine']>) => {
    if (!line) return;
    const text = line.translateToString(true);
    if (line.isWrapped) {
      if (cur !== undefined) cur += text;
      else cur = (out.pop() ?? '') + text;
      return;
    }
    if (cur !== undefined) out.push(cur.trimEnd());
    cur = text;
  };
  const normal = term.buffer.normal;
  const active = term.buffer.active;
  for (let y = 0; y < normal.baseY; y++) row(normal.getLine(y));
  for (let y = active.baseY; y < active.baseY + term.rows; y++) row(active.getLine(y));
  if (cur !== undefined) out.push(cur.trimEnd());
  while (out.length > 0 && out[out.length - 1] === '') out.pop();
  return out;
}
