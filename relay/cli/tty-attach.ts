import type { IPtyProvider, PtyAttachResult } from '../../provider/contract.js';

/** Ctrl-] detaches (like telnet); the terminal keeps running. */
export const DETACH_KEY = 0x1d;

export interface TtyAttachOptions {
  stdin?: NodeJS.ReadStream;
  stdout?: NodeJS.WriteStream;
  /** Printed to stderr once the screen is restored. */
  banner?: string;
}

/** Writes an attach result into the user's terminal: a reset repaints from the snapshot first. */
export function paintAttach(out: NodeJS.WritableStream, r: PtyAttachResult): void {
  if (r.snapshot) out.write(`\x1b[H\x1b[2J\x1b[3J${r.snapshot.data}`);
  if (r.replay) out.write(Buffer.from(r.replay));
}

/**
 * Runs an interactive attach in the caller's tty: raw mode, input forwarding, resize, and the
 * detach key. Resolves with why it ended.
 */
export async function attachTty(
  provider: IPtyProvider,
  attach: PtyAttachResult,
  opts: TtyAttachOptions = {},
): Promise<'detached' | 'exited'> {
  const stdin = opts.stdin ?? process.stdin;
  const stdout = opts.stdout ?? process.stdout;
  const id = attach.id;
  paintAttach(stdout, attach);
  if (attach.exited) return 'exited';
  return new Promise((resolve) => {
    const offData = provider.onData((e) => {
      if (e.id === id) stdout.write(Buffer.from(e.data));
    });
    const finish = (why: 'detached' | 'exited') => {
      offData();
      offExit();
      stdin.off('data', onInput);
      stdout.off('resize', onResize);
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.pause();
      resolve(why);
    };
    const offExit = provider.onExit((e) => {
      if (e.id === id) finish('exited');
    });
    const onInput = (chunk: Buffer) => {
      const k = chunk.indexOf(DETACH_KEY);
      if (k >= 0) {
        if (k > 0) void provider.write(id, chunk.subarray(0, k)).catch(() => {});
        finish('detached');
        return;
      }
      provider.write(id, chunk).catch(() => {});
    };
    const onResize = () => {
      if (stdout.columns && stdout.rows)
        void provider.resize(id, stdout.columns, stdout.rows).catch(() => {});
    };
    if (stdin.isTTY) stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onInput);
    stdout.on('resize', onResize);
    onResize();
  });
}
