import { promises as fsp } from 'node:fs';
import { join } from 'node:path';

/**
 * Bytes of a dead session's log replayed to rebuild its screen: the end of a long log is what
 * the user saw last, and ~4 MiB parse in well under a second on one core.
 */
export const LOG_RESTORE_TAIL_BYTES = 4 * 1024 * 1024;
/** Scrollback rows a screen rebuilt from a log keeps above the screen (the record keeps 2,000). */
export const LOG_RESTORE_SCROLLBACK_ROWS = 10_000;
/** Upper bound of the rebuilt screen's VT text; a larger one is retaken with a quarter of the rows. */
export const LOG_RESTORE_MAX_SCREEN_BYTES = 4 * 1024 * 1024;

const SEGMENT = /^(\d{16})\.seg$/;

export interface LogScreen {
  /** VT data that repaints the screen and the scrollback rows above it. */
  screen: string;
  scrollbackRows: number;
  /** Output bytes the screen reflects (the log's head). */
  seq: number;
  alternateScreen: boolean;
}

export interface LogScreenOptions {
  cols: number;
  rows: number;
  tailBytes?: number;
  scrollbackRows?: number;
  maxScreenBytes?: number;
}

/**
 * Rebuilds the last screen and scrollback of a dead session from its output log (`dir`: segment
 * files named by the seq of their first byte): the log's tail, from its first line start, is
 * parsed by a headless terminal of the session's last size. Undefined when the dir holds no
 * segment. Read errors other than a missing dir reach the caller.
 */
export async function screenFromLog(dir: string, opts: LogScreenOptions): Promise<LogScreen | undefined> {
  const tail = await readLogTail(dir, opts.tailBytes ?? LOG_RESTORE_TAIL_BYTES);
  if (!tail) return undefined;
  const maxBytes = opts.maxScreenBytes ?? LOG_RESTORE_MAX_SCREEN_BYTES;
  let rows = opts.scrollbackRows ?? LOG_RESTORE_SCROLLBACK_ROWS;
  // Loaded here, not at start: the daemon's main thread needs a terminal only to restore the
  // screens of sessions a stopped daemon left (the live models run in the model worker).
  const [{ default: xtermHeadless }, { SerializeAddon }] = await Promise.all([
    import('@xterm/headless'),
    import('@xterm/addon-serialize'),
  ]);
  const term = new xtermHeadless.Terminal({
    cols: opts.cols,
    rows: opts.rows,
    scrollback: rows,
    allowProposedApi: true,
  });
  const serializer = new SerializeAddon();
  term.loadAddon(serializer);
  try {
    await new Promise<void>((resolve) => term.write(tail.bytes, resolve));
    const alternateScreen = term.buffer.active.type === 'alternate';
    for (;;) {
      const screen = serializer.serialize({ scrollback: rows });
      if (Buffer.byteLength(screen) <= maxBytes || rows === 0)
        return { screen, scrollbackRows: rows, seq: tail.head, alternateScreen };
      rows = Math.floor(rows / 4);
    }
  } finally {
    term.dispose();
  }
}

/** The last `maxBytes` of the log (cut forward to a line start when the cut is mid-log), and its head seq. */
async function readLogTail(
  dir: string,
  maxBytes: number,
): Promise<{ bytes: Uint8Array; head: number } | undefined> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const segs = names
    .map((n) => SEGMENT.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ seq: Number(m[1]), path: join(dir, m[0]) }))
    .sort((a, b) => a.seq - b.seq);
  if (segs.length === 0) return undefined;
  const parts: Buffer[] = [];
  let have = 0;
  let head = 0;
  let fromSeq = 0;
  // Newest first, until the tail is long enough.
  for (let i = segs.length - 1; i >= 0 && have < maxBytes; i--) {
    const data = await fsp.readFile(segs[i].path);
    if (i === segs.length - 1) head = segs[i].seq + data.length;
    const skip = Math.max(0, data.length - (maxBytes - have));
    parts.unshift(data.subarray(skip));
    have += data.length - skip;
    fromSeq = segs[i].seq + skip;
  }
  let bytes = Buffer.concat(parts, have);
  // Older output was dropped or left out: start at a line start, not inside an escape sequence.
  if (fromSeq > 0) {
    const nl = bytes.indexOf(0x0a);
    if (nl >= 0) bytes = bytes.subarray(nl + 1);
  }
  return { bytes, head };
}
