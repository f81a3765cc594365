import type { IPtyProvider, PtyAttachResult, PtyDataEvent } from '../../provider/contract.js';

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
 * detach key. `open` spawns or attaches; output that arrives before it resolves is kept and
 * written after the attach result (events can overtake the reply). Resolves with why it ended.
 */
export async function attachTty(
  provider: IPtyProvider,
  open: () => Promise<PtyAttachResult>,
  opts: TtyAttachOptions = {},
): Promise<{ why: 'detached' | 'exited'; attach: PtyAttachResult }> {
  const stdin = opts.stdin ?? process.stdin;
  const stdout = opts.stdout ?? process.stdout;
  const early: PtyDataEvent[] = [];
  let id: string | undefined;
  let exited = false;
  const offData = provider.onData((e) => {
    if (id === undefined) early.push(e);
    else if (e.id === id) stdout.write(Buffer.from(e.data));
  });
  const offExit = provider.onExit((e) => {
    if (e.id === id) exited = true;
  });
  let attach: PtyAttachResult;
  try {
    attach = await open();
  } catch (err) {
    offData();
    offExit();
    throw err;
  }
  id = attach.id;
  paintAttach(stdout, attach);
  for (const e of early) {
    if (e.id === id && e.seq >= attach.providerSequence.value) stdout.write(Buffer.from(e.data));
  }
  if (attach.exited || exited) {
    offData();
    offExit();
    return { why: 'exited', attach };
  }
  const termId = id;
  return new Promise((resolve) => {
    const finish = (why: 'detached' | 'exited') => {
      offData();
      offExit2();
      offExit();
      stdin.off('data', onInput);
      stdout.off('resize', onResize);
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.pause();
      resolve({ why, attach });
    };
    const offExit2 = provider.onExit((e) => {
      if (e.id === termId) finish('exited');
    });
    const onInput = (chunk: Buffer) => {
      const k = chunk.indexOf(DETACH_KEY);
      if (k >= 0) {
        if (k > 0) void provider.write(termId, chunk.subarray(0, k)).catch(() => {});
        finish('detached');
        return;
      }
      provider.write(termId, chunk).catch(() => {});
    };
    const onResize = () => {
      if (stdout.columns && stdout.rows)
        void provider.resize(termId, stdout.columns, stdout.rows).catch(() => {});
    };
    if (stdin.isTTY) stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onInput);
    stdout.on('resize', onResize);
    onResize();
  });
}
