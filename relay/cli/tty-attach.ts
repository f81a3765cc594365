import type {
  IPtyProvider,
  PtyAttachResult,
  PtyDataEvent,
  PtyExitEvent,
  PtyExitInfo,
  ScreenSnapshot,
} from '../../provider/contract.js';

/** Ctrl-] detaches (like telnet); the terminal keeps running. */
export const DETACH_KEY = 0x1d;

/** Streams and stop signal of {@link attachTty}. */
export interface TtyAttachOptions {
  stdin?: NodeJS.ReadStream;
  stdout?: NodeJS.WriteStream;
  /** Ends the attach from outside (e.g. the link was lost for good); resolves with `lost`. */
  signal?: AbortSignal;
  /** A write failed (e.g. INPUT_EXPIRED: typed during an outage and not sent); `bytes` were lost. */
  onInputLost?: (bytes: number, err: unknown) => void;
}

/**
 * Why an interactive attach ended. `restored`: the terminal was lost with its host and the result
 * carries its cold-restore record instead of a stream (the caller shows it).
 */
export type TtyAttachEnd = 'detached' | 'exited' | 'lost' | 'restored';

/**
 * Clears the user's screen and repaints a snapshot. The user's own scrollback is left alone (no
 * `ESC[3J`): it is theirs, not the terminal's being attached.
 */
function paintSnapshot(out: NodeJS.WritableStream, s: ScreenSnapshot): void {
  out.write(`\x1b[H\x1b[2J${s.data}`);
}

/** Writes an attach result into the user's terminal: a reset repaints from the snapshot first. */
export function paintAttach(out: NodeJS.WritableStream, r: PtyAttachResult): void {
  if (r.snapshot) paintSnapshot(out, r.snapshot);
  if (r.replay) out.write(Buffer.from(r.replay));
}

/**
 * Runs an interactive attach in the caller's tty: raw mode, input forwarding, resize, and the
 * detach key. `open` spawns or attaches; output that arrives before it resolves is kept and
 * written after the attach result (events can overtake the reply). A provider that re-attaches
 * on its own (RelayClient, the SSH provider) keeps the stream exact; a reset repaints from its
 * snapshot, an expired session ends the attach. Resolves with why it ended.
 */
export async function attachTty(
  provider: IPtyProvider,
  open: () => Promise<PtyAttachResult>,
  opts: TtyAttachOptions = {},
): Promise<{ why: TtyAttachEnd; attach: PtyAttachResult; exit?: PtyExitInfo }> {
  const stdin = opts.stdin ?? process.stdin;
  const stdout = opts.stdout ?? process.stdout;
  const early: PtyDataEvent[] = [];
  let id: string | undefined;
  let exit: PtyExitInfo | undefined;
  let finish: ((why: TtyAttachEnd) => void) | undefined;
  const offData = provider.onData((e) => {
    if (id === undefined) early.push(e);
    else if (e.id === id) stdout.write(Buffer.from(e.data));
  });
  const earlyExits: PtyExitEvent[] = [];
  const onExit = (e: PtyExitEvent) => {
    exit = { exitCode: e.exitCode, ...(e.signal ? { signal: e.signal } : {}) };
    finish?.('exited');
  };
  const offExit = provider.onExit((e) => {
    if (id === undefined) earlyExits.push(e);
    else if (e.id === id) onExit(e);
  });
  const offReattach = provider.onReattach?.((e) => {
    if (e.id !== id) return;
    if (e.sessionExpired) finish?.('exited');
    else if (e.snapshot) paintSnapshot(stdout, e.snapshot);
  });
  const unsubscribe = () => {
    offData();
    offExit();
    offReattach?.();
  };
  let attach: PtyAttachResult;
  try {
    attach = await open();
  } catch (err) {
    unsubscribe();
    throw err;
  }
  id = attach.id;
  if (attach.sessionExpired && attach.coldRestore) {
    unsubscribe();
    return { why: 'restored', attach, exit: attach.exited };
  }
  paintAttach(stdout, attach);
  for (const e of early) {
    if (e.id === id && e.seq >= attach.providerSequence.value) stdout.write(Buffer.from(e.data));
  }
  for (const e of earlyExits) if (e.id === id && e.incarnationId === attach.incarnationId) onExit(e);
  exit ??= attach.exited;
  if (exit || opts.signal?.aborted) {
    unsubscribe();
    return { why: exit ? 'exited' : 'lost', attach, exit };
  }
  const termId = id;
  return new Promise((resolve) => {
    finish = (why) => {
      finish = undefined;
      unsubscribe();
      opts.signal?.removeEventListener('abort', onAbort);
      stdin.off('data', onInput);
      stdout.off('resize', onResize);
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.pause();
      resolve({ why, attach, exit });
    };
    const onAbort = () => finish?.('lost');
    const send = (data: Buffer) =>
      void provider.write(termId, data).catch((err: unknown) => opts.onInputLost?.(data.length, err));
    const onInput = (chunk: Buffer) => {
      const k = chunk.indexOf(DETACH_KEY);
      if (k >= 0) {
        if (k > 0) send(chunk.subarray(0, k));
        finish?.('detached');
        return;
      }
      send(chunk);
    };
    const onResize = () => {
      if (stdout.columns && stdout.rows)
        void provider.resize(termId, stdout.columns, stdout.rows).catch(() => {});
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (stdin.isTTY) stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onInput);
    stdout.on('resize', onResize);
    onResize();
  });
}
