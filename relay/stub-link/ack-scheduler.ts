import { RateMeter } from '../../provider/rate-meter.js';

/** Acks are coalesced for this long (Orca: 8 ms), so a flood costs ~100 small frames a second. */
const ACK_FLUSH_MS = 5;
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
/** Arrival-rate samples span at least this long. */
const RATE_INTERVAL_MS = 25;

/**
 * Coalesces credit acknowledgements per session: the highest seq wins, sent after a few ms or
 * at once when enough new credit piled up; "enough" follows the session's arrival rate.
 */
export class AckScheduler {
  private readonly pending = new Map<string, number>();
  private readonly sent = new Map<string, number>();
  private readonly pace = new Map<string, RateMeter>();
  private timer: NodeJS.Timeout | undefined;

  /** `send` returns false when the session's link is down (the ack is then dropped; a reattach re-credits). */
  constructor(
    private readonly send: (id: string, seq: number) => boolean,
    private readonly now: () => number = () => performance.now(),
  ) {}

  queue(id: string, seq: number): void {
    if ((this.pending.get(id) ?? -1) >= seq) return;
    this.pending.set(id, seq);
    if (seq - (this.sent.get(id) ?? 0) >= this.eagerBytes(id, seq)) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), ACK_FLUSH_MS);
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

  forget(id: string): void {
    this.pending.delete(id);
    this.sent.delete(id);
    this.pace.delete(id);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const [id, seq] of this.pending) if (this.send(id, seq)) this.sent.set(id, seq);
    this.pending.clear();
  }
}
