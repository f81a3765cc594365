/**
 * A stream's pace in bytes per millisecond, from its position over time: both ends of the stub
 * link size their flow control by it (the stub's credit windows, the relay's acks). A sample
 * spans at least the given interval; the estimate rises to a faster sample at once (a flood
 * should not wait to be believed) and falls by halves (one quiet spell is not a slow link).
 */
export class RateMeter {
  /** Bytes per millisecond. */
  rate = 0;
  private seq: number;
  private t: number;

  constructor(seq: number, t: number) {
    this.seq = seq;
    this.t = t;
  }

  /** The stream reached `seq` at `t`; takes a sample when at least `minSpanMs` passed since the last. */
  update(seq: number, t: number, minSpanMs: number): void {
    const span = t - this.t;
    if (span < minSpanMs) return;
    const sample = (seq - this.seq) / span;
    this.rate = sample >= this.rate ? sample : (this.rate + sample) / 2;
    this.seq = seq;
    this.t = t;
  }
}
