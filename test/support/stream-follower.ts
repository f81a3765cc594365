import { createHash } from 'node:crypto';
import type { PtyDataEvent, PtyReattachEvent } from '../../provider/contract.js';

/** Bytes of `seq 1 n` with CRLF line ends (the PTY's onlcr). */
export function seqBytes(n: number): number {
  let total = 0;
  for (let i = 1; i <= n; i++) total += String(i).length + 2;
  return total;
}

/** sha256 of `seq 1 n` with CRLF line ends, as a PTY delivers it. */
export function seqSha256(n: number): string {
  const h = createHash('sha256');
  const lines: string[] = [];
  for (let i = 1; i <= n; i++) {
    lines.push(`${i}\r\n`);
    if (lines.length === 10_000) h.update(lines.splice(0).join(''));
  }
  h.update(lines.join(''));
  return h.digest('hex');
}

/**
 * Follows one terminal's stream as a RelayClient sees it: contiguous bytes, or explicit resets.
 * Holes (a chunk starting past the next expected seq) are recorded; `hash` covers every new byte
 * from the first one the follower was told to start at (see {@link startAt}).
 */
export class StreamFollower {
  next = -1;
  gaps: string[] = [];
  resets = 0;
  received = 0;
  private hash = createHash('sha256');
  private hashFrom = -1;

  /** Hash only bytes from `seq` on (earlier ones are the shell's own chatter). */
  startAt(seq: number): void {
    this.hashFrom = seq;
    this.hash = createHash('sha256');
  }

  take(e: PtyDataEvent): void {
    if (this.next >= 0 && e.seq > this.next) this.gaps.push(`${this.next}->${e.seq}`);
    const end = e.seq + e.data.length;
    if (this.next < 0 || end > this.next) {
      const from = Math.max(e.seq, this.next < 0 ? e.seq : this.next);
      this.received += end - from;
      if (this.hashFrom >= 0 && end > this.hashFrom) {
        const at = Math.max(from, this.hashFrom);
        this.hash.update(e.data.subarray(at - e.seq));
      }
      this.next = end;
    }
  }

  reset(e: PtyReattachEvent): void {
    if (!e.snapshot) return;
    this.resets++;
    this.next = e.snapshot.seq;
  }

  digest(): string {
    return this.hash.copy().digest('hex');
  }
}
