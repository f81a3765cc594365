/** Acks are coalesced for this long (Orca: 8 ms), so a flood costs ~100 small frames a second. */
const ACK_FLUSH_MS = 5;
/** …but a quarter window of new credit goes out at once, so a flood never waits on the timer. */
const ACK_EAGER_BYTES = 64 * 1024;

/**
 * Coalesces credit acknowledgements per session: the highest seq wins, sent after a few ms or
 * at once when enough new credit piled up.
 */
export class AckScheduler {
  private readonly pending = new Map<string, number>();
  private readonly sent = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  /** `send` returns false when the session's link is down (the ack is then dropped; a reattach re-credits). */
  constructor(private readonly send: (id: string, seq: number) => boolean) {}

  queue(id: string, seq: number): void {
    if ((this.pending.get(id) ?? -1) >= seq) return;
    this.pending.set(id, seq);
    if (seq - (this.sent.get(id) ?? 0) >= ACK_EAGER_BYTES) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), ACK_FLUSH_MS);
  }

  forget(id: string): void {
    this.pending.delete(id);
    this.sent.delete(id);
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
