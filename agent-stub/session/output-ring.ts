/**
 * Byte-exact, sequence-numbered output ring. Holds the most recent `capacity` bytes of a
 * session's output stream; `seq` counts every byte ever appended.
 */
export class OutputRing {
  private readonly buf: Buffer;
  /** Total bytes ever appended == seq of the next byte. */
  private headSeq = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity <= 0)
      throw new RangeError('ring capacity must be a positive integer');
    this.buf = Buffer.alloc(capacity);
  }

  /** Seq of the next byte to be appended. */
  get head(): number {
    return this.headSeq;
  }

  /** Oldest seq still held. */
  get start(): number {
    return Math.max(0, this.headSeq - this.capacity);
  }

  append(data: Uint8Array): void {
    let src = data;
    if (src.length >= this.capacity) {
      // Only the last `capacity` bytes can survive.
      this.headSeq += src.length - this.capacity;
      src = src.subarray(src.length - this.capacity);
    }
    const pos = this.headSeq % this.capacity;
    const first = Math.min(src.length, this.capacity - pos);
    this.buf.set(src.subarray(0, first), pos);
    if (first < src.length) this.buf.set(src.subarray(first), 0);
    this.headSeq += src.length;
  }

  /** True when every byte of `[from, head)` is still held. */
  has(from: number): boolean {
    return from >= this.start && from <= this.headSeq;
  }

  /** Copy of bytes `[from, to)`; `undefined` when any of them has been overwritten. */
  slice(from: number, to: number = this.headSeq): Buffer | undefined {
    if (from < this.start || to > this.headSeq || from > to) return undefined;
    const len = to - from;
    const out = Buffer.allocUnsafe(len);
    const pos = from % this.capacity;
    const first = Math.min(len, this.capacity - pos);
    this.buf.copy(out, 0, pos, pos + first);
    if (first < len) this.buf.copy(out, first, 0, len - first);
    return out;
  }
}
