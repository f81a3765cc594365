import { QueryStripper } from '../../provider/client/query-stripper.js';
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

/** A sequence cut by the end of a chunk is written as it is if nothing completes it this soon. */
const HELD_SEQUENCE_MS = 20;

/**
 * The terminal's output into the user's own terminal, minus the terminal queries in it: the
 * host's stub answers those, and the user's terminal must not answer them a second time (its
 * answer would arrive as typed input). Everything displayed passes unchanged.
 */
export class TtyOutput {
  private readonly stripper = new QueryStripper();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly out: NodeJS.WritableStream) {}

  write(data: Uint8Array): void {
    clearTimeout(this.timer);
    const kept = this.stripper.push(data);
    if (kept.length > 0) this.out.write(Buffer.from(kept.buffer, kept.byteOffset, kept.byteLength));
    if (this.stripper.holding) {
      this.timer = setTimeout(() => this.out.write(Buffer.from(this.stripper.flush())), HELD_SEQUENCE_MS);
      this.timer.unref();
    }
  }

  /**
   * Clears the user's screen and repaints a snapshot. The user's own scrollback is left alone (no
   * `ESC[3J`): it is theirs, not the terminal's being attached.
   */
  paint(s: ScreenSnapshot): void {
    clearTimeout(this.timer);
    this.stripper.reset();
    this.out.write(`\x1b[H\x1b[2J${s.data}`);
  }

  /** Writes an attach result: a reset repaints from the snapshot first. */
  attach(r: PtyAttachResult): void {
    if (r.snapshot) this.paint(r.snapshot);
    if (r.replay) this.write(r.replay);
  }

  dispose(): void {
    clearTimeout(this.timer);
  }
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
  const stdout = new TtyOutput(opts.stdout ?? process.stdout);
  const events = new AttachEvents(provider, stdout);
  let attach: PtyAttachResult;
  try {
    attach = await open();
  } catch (err) {
    events.unsubscribe();
    throw err;
  }
  if (attach.sessionExpired && attach.coldRestore) {
    events.unsubscribe();
    return { why: 'restored', attach, exit: attach.exited };
  }
  stdout.attach(attach);
  events.start(attach);
  if (events.exit || opts.signal?.aborted) {
    events.unsubscribe();
    return { why: events.exit ? 'exited' : 'lost', attach, exit: events.exit };
  }
  const why = await forwardTty(provider, attach.id, events, opts);
  return { why, attach, exit: events.exit };
}

/**
 * The provider's events for one attach: output and exits that come before the attach result are
 * kept, then those of its terminal are written (or end the attach) as they come.
 */
class AttachEvents {
  exit: PtyExitInfo | undefined;
  /** Ends the attach once it is interactive (set by forwardTty). */
  finish: ((why: TtyAttachEnd) => void) | undefined;
  private id: string | undefined;
  private readonly early: PtyDataEvent[] = [];
  private readonly earlyExits: PtyExitEvent[] = [];
  private readonly offs: Array<(() => void) | undefined>;

  constructor(
    provider: IPtyProvider,
    private readonly stdout: TtyOutput,
  ) {
    this.offs = [
      provider.onData((e) => {
        if (this.id === undefined) this.early.push(e);
        else if (e.id === this.id) stdout.write(e.data);
      }),
      provider.onExit((e) => {
        if (this.id === undefined) this.earlyExits.push(e);
        else if (e.id === this.id) this.onExit(e);
      }),
      provider.onReattach?.((e) => {
        if (e.id !== this.id) return;
        if (e.sessionExpired) this.finish?.('exited');
        else if (e.snapshot) stdout.paint(e.snapshot);
      }),
    ];
  }

  /** The attach result is written: from here on only its terminal's events count. */
  start(attach: PtyAttachResult): void {
    const id = attach.id;
    this.id = id;
    for (const e of this.early) {
      if (e.id === id && e.seq >= attach.providerSequence.value) this.stdout.write(e.data);
    }
    for (const e of this.earlyExits)
      if (e.id === id && e.incarnationId === attach.incarnationId) this.onExit(e);
    this.exit ??= attach.exited;
  }

  unsubscribe(): void {
    for (const off of this.offs) off?.();
    this.stdout.dispose();
  }

  private onExit(e: PtyExitEvent): void {
    this.exit = { exitCode: e.exitCode, ...(e.signal ? { signal: e.signal } : {}) };
    this.finish?.('exited');
  }
}

/** The interactive part: raw mode, keys to the terminal (until the detach key), resizes. */
function forwardTty(
  provider: IPtyProvider,
  termId: string,
  events: AttachEvents,
  opts: TtyAttachOptions,
): Promise<TtyAttachEnd> {
  const stdin = opts.stdin ?? process.stdin;
  const stdout = opts.stdout ?? process.stdout;
  return new Promise((resolve) => {
    events.finish = (why) => {
      events.finish = undefined;
      events.unsubscribe();
      opts.signal?.removeEventListener('abort', onAbort);
      stdin.off('data', onInput);
      stdout.off('resize', onResize);
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.pause();
      resolve(why);
    };
    const onAbort = () => events.finish?.('lost');
    const send = (data: Buffer) =>
      void provider.write(termId, data).catch((err: unknown) => opts.onInputLost?.(data.length, err));
    const onInput = (chunk: Buffer) => {
      const k = chunk.indexOf(DETACH_KEY);
      if (k >= 0) {
        if (k > 0) send(chunk.subarray(0, k));
        events.finish?.('detached');
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
