import { monotonicMs } from '../../provider/monotonic-ms.js';
import type { PtySession } from '../session/pty-session.js';

/**
 * A session's batch goes out as soon as it reaches this size, backlog or not. One SSH channel
 * packet's worth: sshd reads a Unix socket in pieces as the kernel hands them over, and a larger
 * frame it reads in two pieces costs two packets (64 KiB frames gave more segments per MB than
 * the old 4 ms timer's ~20 KiB ones).
 */
export const BATCH_MAX_BYTES = 32 * 1024;
/**
 * A PTY read this large emptied a full line-discipline buffer (Linux n_tty hands out at most
 * 4095 bytes while the writer is blocked on it): more output is already waiting in the kernel,
 * so the batch waits for the next read. An echo, a prompt, the end of any burst is shorter.
 */
export const PTY_FULL_READ_BYTES = 4095;
/**
 * A streaming session's batch held for a full read goes out after this long if no read follows
 * (output that ended exactly on the buffer's boundary). Never armed for short reads, so never on
 * an echo; never for a session that is not streaming either (see {@link PEEK_PASSES}).
 */
export const FULL_READ_HOLD_MS = 2;
/**
 * A full read of a session that is not streaming (the first 8 KiB after a pause: a paste's echo,
 * a screen redraw) is held only for this many passes of the event loop's poll, then sent. A full
 * read does not prove more is waiting: a 4 KiB paste comes back from `cat` as 4095 + 1 bytes
 * that the daemon often reads as one 4096-byte chunk, the whole echo, which FULL_READ_HOLD_MS
 * then held for 2 ms (a cluster of pastes at +2 ms in the typing bench). Output the
 * kernel already has arrives within these passes; a stream's refills come later, and it has
 * FULL_READ_HOLD_MS once it streams.
 */
export const PEEK_PASSES = 2;
/**
 * A session that produced this much output with no pause longer than STREAM_GAP_MS between reads
 * is streaming (`cat`, a build log, a line-buffered program a fast daemon reads line by line),
 * never typing: a keystroke's echo or a prompt stays far below it (the tail of a redraw larger
 * than this may wait up to STREAM_HOLD_MS, as every chunk did under the old 4 ms timer).
 */
export const STREAM_MIN_BYTES = 8 * 1024;
/** A pause this long between two reads of a session ends its stream. */
export const STREAM_GAP_MS = 5;
/**
 * A streaming session's batch waits up to this long after its first byte (or until it is full)
 * for more: what the old 4 ms window did for every chunk, now only for a stream of short reads
 * (a batch that held a full read is sent by the short read that ends the kernel's backlog).
 */
export const STREAM_HOLD_MS = 4;

/** Sends `chunks` (together `bytes` long) of `s`, starting at `seq`, as one DATA frame. */
export type SendBatch = (s: PtySession, seq: number, chunks: readonly Uint8Array[], bytes: number) => void;

interface Pending {
  seq: number;
  chunks: Uint8Array[];
  bytes: number;
  /** The last read was full: the kernel holds more for this session. */
  more: boolean;
  /** When the first chunk arrived. */
  since: number;
  /** The session was streaming when a chunk of this batch arrived. */
  streaming: boolean;
  /** A chunk of this batch was a full read: a later short one ended the kernel's backlog. */
  sawFull: boolean;
  /** The last read was full and the session not streaming: {@link OutputBatcher.passes} then. */
  peekFrom?: number;
  /** Its PEEK_PASSES are over with no read after it: it goes at the next turn's end. */
  peeked: boolean;
}

/** A session's output with no pause longer than STREAM_GAP_MS: how much, and the last read. */
interface Burst {
  bytes: number;
  lastAt: number;
}

/**
 * Merges a connection's live output per session while output is known to be waiting: what a
 * turn of the event loop produced goes out at the end of that turn, so an echo leaves at once at
 * any key rate (no timer ever stands between a keystroke and its echo). Chunks pile up per
 * session (one frame, ≤ 64 KiB) while earlier frames still wait to be written (the socket has a
 * backlog; sent when it drains), while the PTY itself has more queued (the last read was full;
 * sent with the next short read), and while the session streams (STREAM_MIN_BYTES without a
 * pause: up to STREAM_HOLD_MS per batch, a socket drain included). Credit needs nothing here: a session out of credit is
 * paused (its producer reads nothing).
 */
export class OutputBatcher {
  private readonly pending = new Map<PtySession, Pending>();
  private holdTimer: NodeJS.Timeout | undefined;
  private streamTimer: NodeJS.Timeout | undefined;
  /** No read followed a full one within FULL_READ_HOLD_MS: the held batches go at the next turn end without a backlog. */
  private holdExpired = false;
  /** When the last chunk arrived: the hold timer counts from it. */
  private lastPushAt = 0;
  private readonly bursts = new WeakMap<PtySession, Burst>();
  /** Passes of the event loop counted while a peek is waiting (see {@link PEEK_PASSES}). */
  private passes = 0;
  private peekArmed = false;

  constructor(
    private readonly send: SendBatch,
    /** Asks for {@link turnEnded} at the end of this turn of the event loop. */
    private readonly armTurn: () => void,
    private readonly clock: () => number = monotonicMs,
  ) {}

  get hasPending(): boolean {
    return this.pending.size > 0;
  }

  push(s: PtySession, seq: number, data: Uint8Array): void {
    const now = this.clock();
    let burst = this.bursts.get(s);
    if (!burst || now - burst.lastAt > STREAM_GAP_MS) {
      burst = { bytes: 0, lastAt: now };
      this.bursts.set(s, burst);
    }
    burst.bytes += data.length;
    burst.lastAt = now;
    let p = this.pending.get(s);
    if (!p) {
      p = {
        seq,
        chunks: [],
        bytes: 0,
        more: false,
        since: now,
        streaming: false,
        sawFull: false,
        peeked: false,
      };
      this.pending.set(s, p);
    }
    if (burst.bytes >= STREAM_MIN_BYTES) p.streaming = true;
    p.chunks.push(data);
    p.bytes += data.length;
    p.more = data.length >= PTY_FULL_READ_BYTES;
    if (p.more) p.sawFull = true;
    p.peekFrom = p.more && !p.streaming ? this.passes : undefined;
    p.peeked = false;
    this.holdExpired = false;
    this.lastPushAt = now;
    if (p.bytes >= BATCH_MAX_BYTES) this.sendOne(s, p);
    // A full read is held for the next one: its turn would send nothing, so none is asked for.
    else if (p.peekFrom !== undefined) this.armPeek();
    else if (p.more) this.armHold();
    else this.armTurn();
  }

  /**
   * The turn is over: send what is not known to grow, unless earlier frames still wait (then
   * {@link drained} sends). A held full read stays (its hold timer ends a turn once reads
   * stopped); a streaming batch waits for its hold, and a timer ends the turn that sends it.
   */
  turnEnded(backlog: boolean): void {
    if (backlog) return;
    const now = this.clock();
    let streamDue = Number.POSITIVE_INFINITY;
    // Deleting the entry being visited is safe while iterating a Map.
    for (const [s, p] of this.pending) {
      if (p.more && !this.holdExpired && !p.peeked) continue;
      if (p.streaming && !p.sawFull && now - p.since < STREAM_HOLD_MS)
        streamDue = Math.min(streamDue, p.since + STREAM_HOLD_MS);
      else this.sendOne(s, p);
    }
    this.holdExpired = false;
    // A stream's batch goes at the first turn end after its hold (a read, or this timer's turn).
    if (streamDue !== Number.POSITIVE_INFINITY && !this.streamTimer) {
      this.streamTimer = setTimeout(
        () => {
          this.streamTimer = undefined;
          this.armTurn();
        },
        Math.max(0, streamDue - now),
      );
    }
  }

  /**
   * Everything written earlier reached the kernel: what is not known to grow goes now, as at a
   * turn's end. A batch still inside its stream hold (or after a full read) keeps waiting: a drain
   * comes as soon as the reader took the last frame, and sending every drain's leftovers made the
   * frames small and back to back, which sshd then read (and sent) piecemeal (issue 23: 60–100
   * packets per MB against the old timer's ~55; paced this way, 53–54).
   */
  drained(): void {
    this.turnEnded(false);
  }

  /**
   * The safety net of a held full read: it fires FULL_READ_HOLD_MS after the last read, so only
   * when reads stopped. One timer per hold, moved on when it fires early (not re-armed per read:
   * a flood reads 250 times per MB). Like the stream timer it ends a turn (so a backlog still
   * waits for its drain), it does not flush.
   */
  protected armHold(): void {
    this.holdTimer ??= setTimeout(this.holdDue, FULL_READ_HOLD_MS);
  }

  /**
   * Counts passes of the event loop (one immediate per pass: immediates run after each poll) until
   * every peeking batch had PEEK_PASSES polls after its full read, then ends a turn for them.
   */
  protected armPeek(): void {
    if (this.peekArmed) return;
    this.peekArmed = true;
    setImmediate(this.peekPass);
  }

  private readonly peekPass = (): void => {
    this.peekArmed = false;
    this.passes++;
    let due = false;
    let waiting = false;
    for (const p of this.pending.values()) {
      if (p.peekFrom === undefined || p.peeked) continue;
      if (this.passes - p.peekFrom >= PEEK_PASSES) {
        p.peeked = true;
        due = true;
      } else waiting = true;
    }
    if (waiting) this.armPeek();
    if (due) this.armTurn();
  };

  private readonly holdDue = (): void => {
    this.holdTimer = undefined;
    let held = false;
    for (const p of this.pending.values()) held ||= p.more;
    if (!held) return;
    const left = this.lastPushAt + FULL_READ_HOLD_MS - this.clock();
    if (left > 0) {
      this.holdTimer = setTimeout(this.holdDue, left);
      return;
    }
    this.holdExpired = true;
    this.armTurn();
  };

  /** Sends everything pending, in order; call before any other frame of the connection. */
  flush(): void {
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    clearTimeout(this.streamTimer);
    this.streamTimer = undefined;
    if (this.pending.size === 0) return;
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
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    clearTimeout(this.streamTimer);
    this.streamTimer = undefined;
    this.pending.clear();
  }

  private sendOne(s: PtySession, p: Pending): void {
    this.pending.delete(s);
    this.send(s, p.seq, p.chunks, p.bytes);
  }
}
