/** What a provider remembers of a session it delivers, to reattach it exactly after a drop. */
export interface SessionTrack {
  id: string;
  host: string;
  localId: string;
  incarnationId: string;
  /** Seq of the next byte the consumer should get (everything before it was delivered). */
  seq: number;
  /** Seq up to which the consumer acknowledged (manual flow control) — credit sent to the stub. */
  consumerSeq: number;
  exitDelivered: boolean;
}

/**
 * Per-session delivery state. Guards incarnations and trims duplicates by seq, so replays and
 * live chunks that overlap are delivered exactly once.
 */
export class SessionTracker {
  private readonly tracks = new Map<string, SessionTrack>();

  /** Records a spawn/attach result: the consumer's view now ends at `seq`. */
  set(id: string, host: string, localId: string, incarnationId: string, seq: number): SessionTrack {
    const t: SessionTrack = { id, host, localId, incarnationId, seq, consumerSeq: seq, exitDelivered: false };
    const old = this.tracks.get(id);
    if (old && old.incarnationId === incarnationId) {
      t.exitDelivered = old.exitDelivered;
      t.consumerSeq = Math.min(old.consumerSeq, seq);
    }
    this.tracks.set(id, t);
    return t;
  }

  get(id: string): SessionTrack | undefined {
    return this.tracks.get(id);
  }

  delete(id: string): void {
    this.tracks.delete(id);
  }

  ofHost(host: string): SessionTrack[] {
    return [...this.tracks.values()].filter((t) => t.host === host);
  }

  isCurrent(id: string, incarnationId: string): boolean {
    return this.tracks.get(id)?.incarnationId === incarnationId;
  }

  /**
   * The part of a chunk the consumer has not seen, or undefined when it is a stale incarnation
   * or a pure duplicate. Advances the session's seq.
   */
  accept(
    id: string,
    incarnationId: string,
    seq: number,
    data: Uint8Array,
  ): { seq: number; data: Uint8Array } | undefined {
    const t = this.tracks.get(id);
    if (!t || t.incarnationId !== incarnationId) return undefined;
    const end = seq + data.length;
    if (end <= t.seq) return undefined;
    const skip = Math.max(0, t.seq - seq);
    t.seq = end;
    return skip === 0 ? { seq, data } : { seq: seq + skip, data: data.subarray(skip) };
  }

  /** True the first time an exit is reported for the current incarnation. */
  markExit(id: string, incarnationId: string): boolean {
    const t = this.tracks.get(id);
    if (!t || t.incarnationId !== incarnationId || t.exitDelivered) return false;
    t.exitDelivered = true;
    return true;
  }
}
