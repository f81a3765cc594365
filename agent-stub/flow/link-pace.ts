import { RateMeter } from '../../provider/flow/rate-meter.js';

/** Output a fast link may have in flight, in milliseconds of its own pace. */
export const WINDOW_TARGET_MS = 20;
/** Rate samples span at least this long (and at least a round trip). */
const RATE_INTERVAL_MS = 25;
/** The smallest round trip seen is forgotten after this long (the route may have changed). */
const MIN_RTT_TTL_MS = 10_000;
/** A send-time mark every this many bytes gives round-trip samples. */
const MARK_BYTES = 16 * 1024;
/** Marks kept at most (older ones are dropped: fewer samples, nothing else). */
const MAX_MARKS = 256;

/**
 * The pace of one consumer link: bytes it acknowledged per millisecond and its smallest round
 * trip (send of a seq → its acknowledgement). The window it wants is the larger of
 * WINDOW_TARGET_MS of output and two round trips of output (the bandwidth-delay product with
 * room to grow: a window-limited link measures window/RTT, wants twice that, and so doubles
 * its window each round trip until the path, not the window, sets its pace).
 */
export class LinkPace {
  private readonly meter: RateMeter;
  private minRtt = Number.POSITIVE_INFINITY;
  private minRttAt = 0;
  private readonly markSeq: number[] = [];
  private readonly markT: number[] = [];
  private lastMark: number;

  constructor(seq: number, t: number) {
    this.meter = new RateMeter(seq, t);
    this.lastMark = seq;
  }

  /** Output up to `head` was sent now (`now` is read only when a mark is due: this runs per PTY read). */
  sent(head: number, now: () => number): void {
    if (head - this.lastMark < MARK_BYTES) return;
    this.lastMark = head;
    if (this.markSeq.length >= MAX_MARKS) {
      this.markSeq.shift();
      this.markT.shift();
    }
    this.markSeq.push(head);
    this.markT.push(now());
  }

  /** The link acknowledged everything before `seq` at `t`. */
  acked(seq: number, t: number): void {
    let sentAt: number | undefined;
    while (this.markSeq.length > 0 && this.markSeq[0]! <= seq) {
      this.markSeq.shift();
      sentAt = this.markT.shift();
    }
    if (sentAt !== undefined) {
      const rtt = t - sentAt;
      if (rtt < this.minRtt || t - this.minRttAt > MIN_RTT_TTL_MS) {
        this.minRtt = rtt;
        this.minRttAt = t;
      }
    }
    this.meter.update(seq, t, Math.max(RATE_INTERVAL_MS, Number.isFinite(this.minRtt) ? this.minRtt : 0));
  }

  /** The window this pace calls for (bytes); the caller clamps it to its bounds. */
  wantedWindow(): number {
    const rtt = Number.isFinite(this.minRtt) ? this.minRtt : 0;
    const rate = this.meter.rate;
    return Math.max(rate * WINDOW_TARGET_MS, 2 * rate * rtt);
  }
}
