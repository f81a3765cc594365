import type { PtySession } from '../session/pty-session.js';

/** A PTY read is at most ~4 KiB; during a flood, reads arriving within this window go out as one frame. */
export const BATCH_WINDOW_MS = 4;
/** A session's batch is sent at once when it reaches this size. */
export const BATCH_MAX_BYTES = 64 * 1024;

interface Pending {
  seq: number;
  chunks: Uint8Array[];
  bytes: number;
}

/**
 * Coalesces a connection's live output during floods without delaying interactive output: the
 * first chunk after a quiet period goes out at once (typing echo), later chunks within
 * BATCH_WINDOW_MS are merged per session. Fewer, larger frames cost less on every hop (stub
 * socket, sshd, ssh2, the relay's decoder and listeners).
 */
export class OutputBatcher {
  private readonly pending = new Map<PtySession, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private lastSend = Number.NEGATIVE_INFINITY;

  constructor(
    /** Sends `chunks` (together `bytes` long) as one frame. */
    private readonly send: (s: PtySession, seq: number, chunks: readonly Uint8Array[], bytes: number) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  push(s: PtySession, seq: number, data: Uint8Array): void {
    const t = this.now();
    if (!this.timer && this.pending.size === 0 && t - this.lastSend >= BATCH_WINDOW_MS) {
      this.lastSend = t;
      this.send(s, seq, [data], data.length);
      return;
    }
    let p = this.pending.get(s);
    if (!p) {
      p = { seq, chunks: [], bytes: 0 };
      this.pending.set(s, p);
    }
    p.chunks.push(data);
    p.bytes += data.length;
    if (p.bytes >= BATCH_MAX_BYTES) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), BATCH_WINDOW_MS);
  }

  /** Sends everything pending, in order; call before any other frame of the connection. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return;
    this.lastSend = this.now();
    const all = [...this.pending];
    this.pending.clear();
    // The chunks go to the socket as they are (one writev), not copied into one buffer first.
    for (const [s, p] of all) this.send(s, p.seq, p.chunks, p.bytes);
  }

  /** Drops what is pending for `s` (it is being detached or switched to background). */
  drop(s: PtySession): void {
    this.pending.delete(s);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }
}
