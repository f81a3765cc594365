import { monotonicMs } from '../../provider/monotonic-ms.js';
import { LinkPace } from './link-pace.js';
import type { ProducerGate } from './producer-gate.js';

/**
 * Unacknowledged bytes per consumer link before the PTY is paused (Orca: 256 Ki chars): the
 * window of a slow or idle link. A fast link's window grows with its measured pace, up to the
 * session's maximum (see {@link LinkPace}).
 */
export const DEFAULT_CREDIT_WINDOW = 256 * 1024;
/** Ceiling of a fast link's window (never more than half the session's ring). */
export const DEFAULT_CREDIT_WINDOW_MAX = 2 * 1024 * 1024;
/** A link that dropped without saying goodbye keeps its claim this long, so a reconnect replays exactly. */
export const DEFAULT_CREDIT_GRACE_MS = 30_000;

interface LinkCredit {
  acked: number;
  lostAt?: number;
  pace: LinkPace;
}

export interface CreditWindowOptions {
  /** Window of a slow or idle link (bytes). */
  minBytes?: number;
  /** Largest window a fast link may get; read at every sizing (the ring's limit can change). */
  maxBytes?: () => number;
  graceMs?: number;
  now?: () => number;
  /**
   * Whether a dropped link (within its grace) still pauses the producer. False while the session's
   * output log is healthy: the program runs on and the log keeps what the link has not seen.
   */
  lostLinksHold?: () => boolean;
  /**
   * While lost links do not hold: how far behind a dropped link (within its grace) may fall before
   * it holds the producer after all, so its reconnect still replays exactly (what the log can keep
   * of it: the log drops whole segments, oldest first). Default: no bound.
   */
  lostLinkBytes?: () => number;
}

/**
 * Credit flow control of one session. Every consumer link has acknowledged up to some seq; when
 * any link is a whole window behind the output head, the PTY is paused (the program blocks in
 * the kernel). A link whose connection dropped keeps its claim for a grace period, so output
 * produced during a short outage waits in the ring instead of overrunning it.
 *
 * Each link's window follows its pace: what it acknowledged per second and its round trip. A
 * fast link may be ~20 ms of output (or two round trips) behind, so its consumer acknowledges
 * rarely, which is what a flood costs on every hop; a slow link stays at the minimum, which bounds
 * the output still in flight after the user interrupts a program.
 */
export class CreditWindow {
  private readonly links = new Map<string, LinkCredit>();
  private head = 0;
  readonly minBytes: number;
  private readonly maxBytes: () => number;
  private readonly graceMs: number;
  private readonly now: () => number;
  private readonly lostLinksHold: () => boolean;
  private readonly lostLinkBytes: () => number;

  constructor(
    private readonly gate: ProducerGate,
    opts: CreditWindowOptions = {},
  ) {
    this.minBytes = opts.minBytes ?? DEFAULT_CREDIT_WINDOW;
    const max = opts.maxBytes ?? (() => DEFAULT_CREDIT_WINDOW_MAX);
    this.maxBytes = () => Math.max(this.minBytes, max());
    this.graceMs = opts.graceMs ?? DEFAULT_CREDIT_GRACE_MS;
    this.now = opts.now ?? monotonicMs;
    this.lostLinksHold = opts.lostLinksHold ?? (() => true);
    this.lostLinkBytes = opts.lostLinkBytes ?? (() => Number.POSITIVE_INFINITY);
  }

  private reason(linkId: string): string {
    return `credit:${linkId}`;
  }

  /** A link attached (or re-attached) with everything before `seq` already delivered. */
  register(linkId: string, seq: number): void {
    const c = this.links.get(linkId);
    if (c) {
      c.acked = Math.max(c.acked, seq);
      c.lostAt = undefined;
    } else this.links.set(linkId, { acked: seq, pace: new LinkPace(seq, this.now()) });
    this.check(linkId);
  }

  ack(linkId: string, seq: number): void {
    const c = this.links.get(linkId);
    if (!c || seq <= c.acked) return;
    c.acked = Math.min(seq, this.head);
    c.pace.acked(c.acked, this.now());
    this.check(linkId);
  }

  /** The link's connection closed without a goodbye: keep its claim for the grace period. */
  lost(linkId: string, now = Date.now()): void {
    const c = this.links.get(linkId);
    if (!c) return;
    c.lostAt ??= now;
    this.check(linkId);
  }

  /** The link left on purpose (detach, goodbye): it no longer holds the producer. */
  forget(linkId: string): void {
    if (!this.links.delete(linkId)) return;
    this.gate.release(this.reason(linkId));
  }

  /** New output reached `head`. */
  advance(head: number): void {
    this.head = head;
    for (const [linkId, c] of this.links) {
      c.pace.sent(head, this.now);
      if (this.holds(c)) this.gate.hold(this.reason(linkId));
    }
  }

  sweep(now = Date.now()): void {
    for (const [linkId, c] of this.links) {
      if (c.lostAt !== undefined && now - c.lostAt >= this.graceMs) this.forget(linkId);
    }
  }

  /** Links holding a claim: attached in the foreground, or dropped and within the grace period. */
  get claims(): number {
    return this.links.size;
  }

  /** Bytes the slowest link has not acknowledged. */
  get unacked(): number {
    let worst = 0;
    for (const c of this.links.values()) worst = Math.max(worst, this.head - c.acked);
    return worst;
  }

  /** The current window of a link (bytes); NaN for a link it does not know. */
  windowOf(linkOrId: LinkCredit | string): number {
    const c = typeof linkOrId === 'string' ? this.links.get(linkOrId) : linkOrId;
    if (!c) return Number.NaN;
    const max = this.maxBytes();
    return Math.min(max, Math.max(this.minBytes, c.pace.wantedWindow()));
  }

  private check(linkId: string): void {
    const c = this.links.get(linkId);
    if (!c) return;
    if (this.holds(c)) this.gate.hold(this.reason(linkId));
    else this.gate.release(this.reason(linkId));
  }

  /**
   * A link a window behind holds the producer. A dropped one, while lost links do not hold (the
   * output log keeps what it missed), only once it is as far behind as the log can keep.
   */
  private holds(c: LinkCredit): boolean {
    if (c.lostAt !== undefined && !this.lostLinksHold()) return this.head - c.acked >= this.lostLinkBytes();
    return this.head - c.acked >= this.windowOf(c);
  }
}
