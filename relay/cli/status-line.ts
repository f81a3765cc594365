/** A status message waits this long before it is shown (a quick reconnect stays invisible). */
const STATUS_DELAY_MS = 300;
/** Columns assumed when stderr does not report its width. */
const DEFAULT_COLUMNS = 80;
/** Between the message and the hint. */
const GAP = '  ';
const ELLIPSIS = '…';

/**
 * Fits a status line into `width` columns: the hint (e.g. `Ctrl-] detaches`) stays whole at the
 * end and the message is shortened with `…` where it does not fit; only when even the hint does
 * not fit is it cut too. Counts code points (status text is not wide CJK).
 */
export function fitStatus(message: string, hint: string, width: number): string {
  const msg = Array.from(message);
  const tail = hint ? Array.from(`${GAP}${hint}`) : [];
  if (msg.length + tail.length <= width) return msg.join('') + tail.join('');
  const room = width - tail.length;
  if (room >= 2) return `${msg.slice(0, room - 1).join('')}${ELLIPSIS}${tail.join('')}`;
  const all = Array.from(hint || message);
  return all.length <= width ? all.join('') : `${all.slice(0, Math.max(0, width - 1)).join('')}${ELLIPSIS}`;
}

/**
 * One status line on stderr while something is wrong (the relay unreachable, a host deploying).
 * On a tty it is drawn on the bottom row in reverse video, fitted to the terminal's width
 * (cursor saved and restored) and erased once resolved; otherwise it is a plain line.
 */
export function statusLine(stderr: NodeJS.WriteStream = process.stderr) {
  let shown = false;
  let timer: NodeJS.Timeout | undefined;
  const draw = (msg: string, hint: string) => {
    if (stderr.isTTY && stderr.rows) {
      // The last column is left free: writing it makes some terminals wrap.
      const text = fitStatus(msg, hint, (stderr.columns || DEFAULT_COLUMNS) - 1);
      stderr.write(`\x1b7\x1b[${stderr.rows};1H\x1b[2K\x1b[7m${text}\x1b[0m\x1b8`);
    } else stderr.write(`\r\n${msg}${hint ? `${GAP}${hint}` : ''}\r\n`);
    shown = true;
  };
  return {
    /** Shows `msg` (after a short delay the first time), with `hint` kept whole at its end. */
    show(msg: string, hint = ''): void {
      clearTimeout(timer);
      if (shown) draw(msg, hint);
      else timer = setTimeout(() => draw(msg, hint), STATUS_DELAY_MS);
    },
    clear(msg?: string): void {
      clearTimeout(timer);
      if (!shown) return;
      shown = false;
      if (stderr.isTTY && stderr.rows) stderr.write(`\x1b7\x1b[${stderr.rows};1H\x1b[2K\x1b8`);
      else if (msg) stderr.write(`\r\n${msg}\r\n`);
    },
  };
}
