import type { PtySession } from '../session/pty-session.js';

/** One read of the history while a link catches up: a frame of this size, then the next. */
export const CATCH_UP_CHUNK_BYTES = 256 * 1024;
/** The connection's socket may hold this much before the catch-up waits for it to drain. */
const CATCH_UP_SOCKET_BYTES = 1024 * 1024;
/** How often a catch-up that waits for the socket looks again. */
const CATCH_UP_WAIT_MS = 2;

export interface CatchUpTarget {
  /** Sends the bytes `[seq, seq + data.length)` of `s` as ordinary output. */
  send(s: PtySession, seq: number, data: Uint8Array): void;
  /** Bytes the connection's socket still holds. */
  buffered(): number;
  /** The caught-up range is live now: what was held back for it (an exit) may follow. */
  caughtUp(s: PtySession): void;
  /** The history no longer holds `seq` (its segment was dropped, the log failed) or a read failed. */
  lost(s: PtySession, seq: number, err?: Error): void;
}

/**
 * Replays a session's history to one connection from a seq the RAM tail no longer holds: reads
 * the log in chunks, paced by the connection's socket, and switches to live output in the same
 * turn it reaches the head. Live output meanwhile is not sent (the history holds it); credit keeps
 * the program from outrunning the log while the link is behind (its window counts from `from`).
 */
export class HistoryCatchUp {
  /** One token per running catch-up: a stopped and restarted one never runs twice. */
  private readonly cursors = new Map<PtySession, { seq: number }>();

  constructor(private readonly target: CatchUpTarget) {}

  start(s: PtySession, from: number): void {
    const token = { seq: from };
    this.cursors.set(s, token);
    void this.run(s, token);
  }

  /** True while `s` is catching up (its live output is not sent). */
  has(s: PtySession): boolean {
    return this.cursors.has(s);
  }

  stop(s: PtySession): void {
    this.cursors.delete(s);
  }

  dispose(): void {
    this.cursors.clear();
  }

  private async run(s: PtySession, token: { seq: number }): Promise<void> {
    const current = () => this.cursors.get(s) === token;
    while (current()) {
      if (this.target.buffered() > CATCH_UP_SOCKET_BYTES) {
        await new Promise((r) => setTimeout(r, CATCH_UP_WAIT_MS));
        continue;
      }
      const cursor = token.seq;
      const head = s.history.head;
      if (cursor >= head) {
        // Same turn as the check: output after this point is live.
        this.cursors.delete(s);
        this.target.caughtUp(s);
        return;
      }
      let data: Buffer | undefined;
      try {
        data = await s.history.read(cursor, Math.min(head, cursor + CATCH_UP_CHUNK_BYTES));
      } catch (err) {
        if (current()) this.target.lost(s, cursor, err as Error);
        this.cursors.delete(s);
        return;
      }
      if (!current()) return;
      if (!data) {
        this.cursors.delete(s);
        this.target.lost(s, cursor);
        return;
      }
      this.target.send(s, cursor, data);
      token.seq = cursor + data.length;
    }
  }
}
