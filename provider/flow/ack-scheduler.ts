import { RateMeter } from './rate-meter.js';

/** A slow session's ack goes out at once after this much new credit (a quarter of the stub's smallest window). */
export const ACK_MIN_BYTES = 64 * 1024;
/** …a fast one's after ACK_PACE_MS of its own output, at most this much. */
export const ACK_MAX_BYTES = 512 * 1024;
/**
 * Milliseconds of a session's output per eager ack. The stub lets a fast link be ~20 ms of output
 * behind (link-pace.ts), so acking every 5 ms of it never stalls the program, and a flood costs
 * ~200 acks a second instead of one per 64 KiB (each one an encrypted packet, a wakeup of sshd and
 * of the stub).
 */
const ACK_PACE_MS = 5;
/** Credit of at least ACK_MIN_BYTES below the eager size is coalesced this long (Orca: 8 ms). */
const ACK_FLUSH_MS = 5;
/**
 * Credit under ACK_MIN_BYTES never holds the producer (the smallest window is four times that),
 * so it rides with the next frame the relay sends on the link (a keystroke, a request, a ping)
 * and goes alone only after this long. Sent alone right after an echo, it would be a small
 * segment ahead of the next keystroke, which then waits for the host's delayed ACK (40 ms and
 * more) on any hop with Nagle on (issue 23).
 */
export const ACK_IDLE_MS = 1000;
/** Arrival-rate samples span at least this long. */
const RATE_INTERVAL_MS = 25;

/**
 * When credit acknowledgements go to the stub: the highest seq per session wins. Much new credit
 * (ACK_PACE_MS of the session's output, measured) goes at once; a flood's smaller remainder
 * within ACK_FLUSH_MS; the little an interactive session consumes rides with the next frame
 * ({@link rideWith}), so a keystroke and the credit for the previous echo are one packet.
 */
export class AckScheduler {
  private readonly pending = new Map<string, number>();
  private readonly sent = new Map<string, number>();
  private readonly pace = new Map<string, RateMeter>();
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Number.POSITIVE_INFINITY;

  /** `send` returns false when the session's link is down (the ack is then dropped; a reattach re-credits). */
  constructor(
    private readonly send: (id: string, seq: number) => boolean,
    private readonly now: () => number = () => performance.now(),
  ) {}

  queue(id: string, seq: number): void {
    if ((this.pending.get(id) ?? -1) >= seq) return;
    this.pending.set(id, seq);
    const fresh = seq - (this.sent.get(id) ?? 0);
    if (fresh >= this.eagerBytes(id, seq)) this.flush();
    else this.arm(fresh >= ACK_MIN_BYTES ? ACK_FLUSH_MS : ACK_IDLE_MS);
  }

  /** New credit that makes the session's ack go out at once (bytes). */
  eagerBytes(id: string, seq: number): number {
    const t = this.now();
    let p = this.pace.get(id);
    if (!p) {
      p = new RateMeter(seq, t);
      this.pace.set(id, p);
    } else p.update(seq, t, RATE_INTERVAL_MS);
    return Math.min(ACK_MAX_BYTES, Math.max(ACK_MIN_BYTES, p.rate * ACK_PACE_MS));
  }

  /** A frame is about to go out on a link: the pending acks of its sessions (`mine`) go with it. */
  rideWith(mine: (id: string) => boolean): void {
    for (const [id, seq] of this.pending) {
      if (!mine(id)) continue;
      this.pending.delete(id);
      if (this.send(id, seq)) this.sent.set(id, seq);
    }
  }

  /**
   * The peer forgot what `id` was acknowledged (the session was attached afresh): the next ack
   * counts all its credit as new, so it goes out at once.
   */
  rebase(id: string): void {
    this.sent.delete(id);
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  forget(id: string): void {
    this.pending.delete(id);
    this.sent.delete(id);
    this.pace.delete(id);
  }

  dispose(): void {
    this.disarm();
    this.pending.clear();
  }

  private arm(ms: number): void {
    const due = this.now() + ms;
    if (this.timer && this.timerDue <= due) return;
    this.disarm();
    this.timerDue = due;
    this.timer = setTimeout(() => this.flush(), ms);
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDue = Number.POSITIVE_INFINITY;
  }

  private flush(): void {
    this.disarm();
    for (const [id, seq] of this.pending) if (this.send(id, seq)) this.sent.set(id, seq);
    this.pending.clear();
  }
}
