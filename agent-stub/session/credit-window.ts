import type { ProducerGate } from './producer-gate.js';

/** Unacknowledged bytes per consumer link before the PTY is paused (Orca: 256 Ki chars). */
export const DEFAULT_CREDIT_WINDOW = 256 * 1024;
/** A link that dropped without saying goodbye keeps its claim this long, so a reconnect replays exactly. */
export const DEFAULT_CREDIT_GRACE_MS = 30_000;

interface LinkCredit {
  acked: number;
  lostAt?: number;
}

/**
 * Credit flow control of one session. Every consumer link has acknowledged up to some seq; when
 * any link is a whole window behind the output head, the PTY is paused (the program blocks in
 * the kernel). A link whose connection dropped keeps its claim for a grace period, so output
 * produced during a short outage waits in the ring instead of overrunning it.
 */
export class CreditWindow {
  private readonly links = new Map<string, LinkCredit>();
  private head = 0;

  constructor(
    private readonly gate: ProducerGate,
    readonly windowBytes = DEFAULT_CREDIT_WINDOW,
    private readonly graceMs = DEFAULT_CREDIT_GRACE_MS,
  ) {}

  private reason(linkId: string): string {
    return `credit:${linkId}`;
  }

  /** A link attached (or re-attached) with everything before `seq` already delivered. */
  register(linkId: string, seq: number): void {
    const c = this.links.get(linkId);
    if (c) {
      c.acked = Math.max(c.acked, seq);
      c.lostAt = undefined;
    } else this.links.set(linkId, { acked: seq });
    this.check(linkId);
  }

  ack(linkId: string, seq: number): void {
    const c = this.links.get(linkId);
    if (!c || seq <= c.acked) return;
    c.acked = Math.min(seq, this.head);
    this.check(linkId);
  }

  /** The link's connection closed without a goodbye: keep its claim for the grace period. */
  lost(linkId: string, now = Date.now()): void {
    const c = this.links.get(linkId);
    if (c) c.lostAt ??= now;
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
      if (head - c.acked >= this.windowBytes) this.gate.hold(this.reason(linkId));
    }
  }

  sweep(now = Date.now()): void {
    for (const [linkId, c] of this.links) {
      if (c.lostAt !== undefined && now - c.lostAt >= this.graceMs) this.forget(linkId);
    }
  }

  /** Bytes the slowest link has not acknowledged. */
  get unacked(): number {
    let worst = 0;
    for (const c of this.links.values()) worst = Math.max(worst, this.head - c.acked);
    return worst;
  }

  private check(linkId: string): void {
    const c = this.links.get(linkId);
    if (!c) return;
    if (this.head - c.acked >= this.windowBytes) this.gate.hold(this.reason(linkId));
    else this.gate.release(this.reason(linkId));
  }
}
