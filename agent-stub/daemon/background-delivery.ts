import type { PtyExitInfo, PtyFact } from '../../provider/contract.js';
import { KeepTailThinner, type ThinnedEvent } from '../flow/keep-tail-thinner.js';
import type { PtySession } from '../session/pty-session.js';

/** A background session's tail crosses the link at most this often. */
export const BACKGROUND_FLUSH_MS = 1000;
/** Keep-tail per background session: min(512 KiB, max(64 KiB, 2 MiB ÷ background sessions)) (Orca's rule). */
export const KEEP_TAIL_MIN = 64 * 1024;
export const KEEP_TAIL_MAX = 512 * 1024;
export const KEEP_TAIL_POOL = 2 * 1024 * 1024;

export function keepTailBytes(backgroundSessions: number, min = KEEP_TAIL_MIN): number {
  return Math.min(KEEP_TAIL_MAX, Math.max(min, Math.floor(KEEP_TAIL_POOL / Math.max(1, backgroundSessions))));
}

/** How a connection sends one session's stream (the connection implements it). */
export interface StreamOut {
  data(s: PtySession, seq: number, data: Uint8Array): void;
  fact(s: PtySession, seq: number, fact: PtyFact): void;
  /** A background stream event (`backgroundMarker`, `dataGap`, `fact`). */
  background(s: PtySession, event: Record<string, unknown>): void;
}

/**
 * The background sessions of one connection: their output goes through a keep-tail thinner
 * and is flushed once a second, as ordered background events, instead of streaming live.
 */
export class BackgroundDelivery {
  private readonly thinners = new Map<PtySession, KeepTailThinner>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly out: StreamOut,
    private readonly keepTailMin = KEEP_TAIL_MIN,
  ) {}

  has(s: PtySession): boolean {
    return this.thinners.has(s);
  }

  start(s: PtySession): void {
    if (this.thinners.has(s)) return;
    this.thinners.set(
      s,
      new KeepTailThinner(s.ring.head, keepTailBytes(this.thinners.size + 1, this.keepTailMin)),
    );
    this.resize();
    this.out.background(s, { type: 'backgroundMarker', background: true, seq: s.ring.head });
    this.timer ??= setInterval(() => this.flushAll(), BACKGROUND_FLUSH_MS);
  }

  /** Leaves background mode; what was pending is superseded by the caller's snapshot. */
  stop(s: PtySession): void {
    if (!this.thinners.delete(s)) return;
    this.resize();
    if (this.thinners.size === 0) this.dispose();
  }

  data(s: PtySession, seq: number, data: Uint8Array): boolean {
    const t = this.thinners.get(s);
    if (!t) return false;
    t.pushData(seq, data);
    return true;
  }

  fact(s: PtySession, seq: number, fact: PtyFact): boolean {
    const t = this.thinners.get(s);
    if (!t) return false;
    t.pushFact(seq, fact);
    return true;
  }

  /** Flushes what is pending, then reports the exit in order; the caller sends the normal exit after. */
  exit(s: PtySession, info: PtyExitInfo, seq: number): void {
    if (!this.thinners.has(s)) return;
    this.flush(s);
    this.out.background(s, { type: 'fact', seq, fact: { type: 'exit', ...info } });
  }

  dispose(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private resize(): void {
    const keep = keepTailBytes(this.thinners.size, this.keepTailMin);
    for (const t of this.thinners.values()) t.keepBytes = keep;
  }

  private flushAll(): void {
    for (const s of this.thinners.keys()) this.flush(s);
  }

  private flush(s: PtySession): void {
    const t = this.thinners.get(s);
    if (!t?.hasEvents) return;
    for (const e of t.flush()) this.emit(s, e);
  }

  private emit(s: PtySession, e: ThinnedEvent): void {
    if (e.kind === 'data') this.out.data(s, e.seq, e.data);
    else if (e.kind === 'gap') {
      this.out.background(s, {
        type: 'dataGap',
        droppedBytes: e.droppedBytes,
        fromSeq: e.fromSeq,
        toSeq: e.toSeq,
      });
    } else if (e.dropped) this.out.background(s, { type: 'fact', seq: e.seq, fact: e.fact });
    else this.out.fact(s, e.seq, e.fact);
  }
}
