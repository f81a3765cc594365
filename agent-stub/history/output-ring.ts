/** First allocation of a ring; it doubles as output arrives, up to its limit. */
const INITIAL_BYTES = 64 * 1024;

/**
 * Byte-exact, sequence-numbered output ring. Holds the most recent `limit` bytes of a session's
 * output stream; `seq` counts every byte ever appended. Memory follows use: the buffer starts
 * small and doubles up to the limit, and lowering the limit (a session every consumer has put
 * in the background) gives the memory back at once.
 */
export class OutputRing {
  private buf: Buffer;
  /** Total bytes ever appended == seq of the next byte. */
  private headSeq = 0;
  /** Oldest seq still held. */
  private startSeq = 0;

  constructor(private limitBytes: number) {
    checkLimit(limitBytes);
    this.buf = Buffer.allocUnsafe(Math.min(INITIAL_BYTES, limitBytes));
  }

  /** Most bytes the ring holds. */
  get capacity(): number {
    return this.limitBytes;
  }

  /** Bytes of memory the ring holds right now. */
  get allocated(): number {
    return this.buf.length;
  }

  /** Seq of the next byte to be appended. */
  get head(): number {
    return this.headSeq;
  }

  /** Oldest seq still held. */
  get start(): number {
    return this.startSeq;
  }

  /** Changes the limit; a lower one drops the oldest bytes beyond it and frees their memory. */
  setLimit(bytes: number): void {
    checkLimit(bytes);
    if (bytes === this.limitBytes) return;
    this.limitBytes = bytes;
    if (this.buf.length > bytes) {
      this.startSeq = Math.max(this.startSeq, this.headSeq - bytes);
      this.relayout(bytes);
    }
  }

  append(data: Uint8Array): void {
    let src = data;
    if (src.length >= this.limitBytes) {
      // Only the last `limit` bytes can survive.
      this.headSeq += src.length - this.limitBytes;
      this.startSeq = this.headSeq;
      src = src.subarray(src.length - this.limitBytes);
    }
    const want = this.headSeq + src.length - this.startSeq;
    if (want > this.buf.length && this.buf.length < this.limitBytes)
      this.relayout(Math.min(this.limitBytes, Math.max(want, this.buf.length * 2)));
    const cap = this.buf.length;
    const pos = this.headSeq % cap;
    const first = Math.min(src.length, cap - pos);
    this.buf.set(src.subarray(0, first), pos);
    if (first < src.length) this.buf.set(src.subarray(first), 0);
    this.headSeq += src.length;
    this.startSeq = Math.max(this.startSeq, this.headSeq - cap);
  }

  /** True when every byte of `[from, head)` is still held. */
  has(from: number): boolean {
    return from >= this.startSeq && from <= this.headSeq;
  }

  /** Copy of bytes `[from, to)`; `undefined` when any of them has been overwritten. */
  slice(from: number, to: number = this.headSeq): Buffer | undefined {
    if (from < this.startSeq || to > this.headSeq || from > to) return undefined;
    const len = to - from;
    const out = Buffer.allocUnsafe(len);
    const cap = this.buf.length;
    const pos = from % cap;
    const first = Math.min(len, cap - pos);
    this.buf.copy(out, 0, pos, pos + first);
    if (first < len) this.buf.copy(out, first, 0, len - first);
    return out;
  }

  /** Moves the held bytes into a buffer of `size` bytes (held ≤ size), keeping seq % size positions. */
  private relayout(size: number): void {
    const held = this.slice(this.startSeq) ?? Buffer.alloc(0);
    const next = Buffer.allocUnsafe(size);
    const pos = this.startSeq % size;
    const first = Math.min(held.length, size - pos);
    held.copy(next, pos, 0, first);
    if (first < held.length) held.copy(next, 0, first);
    this.buf = next;
  }
}

function checkLimit(bytes: number): void {
  if (!Number.isInteger(bytes) || bytes <= 0)
    throw new RangeError('ring capacity must be a positive integer');
}
