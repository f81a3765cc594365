import type { ColdRestore } from '../../provider/contract.js';

/** Keys that accept the offer of a new shell (Enter included) and those that decline it. */
const YES_KEYS = new Set(['y', 'Y', '\r', '\n']);
const NO_KEYS = new Set(['n', 'N', 'q', '\x1b', '\x03', '\x1d']);

function when(ms: number | undefined): string {
  return ms === undefined
    ? 'unknown time'
    : `${new Date(ms).toISOString().replace('T', ' ').slice(0, 19)} UTC`;
}

/** The line under a restored screen: what it is and why nothing runs there any more. */
export function restoredBanner(id: string, cr: ColdRestore): string {
  const exit = cr.exited
    ? `exited (code ${cr.exited.exitCode}) before the host went down`
    : 'ended with its host';
  return `restored: ${id} ${exit}; this is its last screen, saved ${when(cr.savedAt)}`;
}

/**
 * Paints a cold-restored terminal into the user's terminal: its saved screen and scrollback,
 * then a reverse-video banner saying it is a restored copy, not a live terminal.
 */
export function paintRestored(out: NodeJS.WritableStream, id: string, cr: ColdRestore): void {
  out.write(`\x1b[H\x1b[2J\x1b[3J${cr.scrollback}\x1b[0m\r\n\x1b[7m ${restoredBanner(id, cr)} \x1b[0m\r\n`);
}

/** Asks (one key, raw mode) whether to open a new shell in `cwd`; false without a tty. */
export function askNewShell(
  stdin: NodeJS.ReadStream,
  out: NodeJS.WritableStream,
  cwd: string,
): Promise<boolean> {
  if (!stdin.isTTY) return Promise.resolve(false);
  out.write(`Open a new shell in ${cwd}? [Y/n] `);
  return new Promise((resolve) => {
    const onKey = (chunk: Buffer) => {
      const key = chunk.toString('utf8').slice(0, 1);
      if (!YES_KEYS.has(key) && !NO_KEYS.has(key)) return;
      stdin.off('data', onKey);
      stdin.setRawMode(false);
      stdin.pause();
      out.write(YES_KEYS.has(key) ? 'yes\r\n' : 'no\r\n');
      resolve(YES_KEYS.has(key));
    };
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onKey);
  });
}
