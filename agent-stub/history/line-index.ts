/**
 * Where a session's output lines begin, for paging through its log by line. Line `n` is the text
 * after the `n`-th LF the session printed (line 0 starts at the log's first seq). The index keeps
 * the seq of a line start every {@link LINE_MARK_EVERY} lines and {@link LINE_MARK_MIN_BYTES}
 * bytes (both), so finding a line costs reading at most that many lines or bytes from the log. It
 * is fed the bytes in seq order, behind the PTY reader (when the log's write-behind takes them, or
 * when a reader needs the newest), never on the delivery path. Pure: no I/O.
 */

/** At least this many lines between marks. */
export const LINE_MARK_EVERY = 256;
/**
 * At least this many bytes between marks, so their number is bounded by the bytes the log holds
 * whatever the lines' length: a 64 MiB log keeps at most 4,096 marks (64 KiB). By lines alone,
 * fifty sessions that had printed `seq 1 1250000` (8-byte lines) held 5.3 MB of marks.
 */
export const LINE_MARK_MIN_BYTES = 16 * 1024;

const LF = 0x0a;

export interface LineMark {
  line: number;
  seq: number;
}

export class LineIndex {
  /** LFs seen so far: the number of the line the next byte belongs to. */
  private lfs = 0;
  private scanned: number;
  /** Marks, oldest first: `markLines[i]` starts at `markSeqs[i]`. */
  private markLines: number[] = [];
  private markSeqs: number[] = [];
  private lastByteLf = true;
  /** The newest mark (kept when a drop removed it from the arrays). */
  private lastMarkLine = 0;
  private lastMarkSeq: number;

  constructor(startSeq: number) {
    this.scanned = startSeq;
    this.lastMarkSeq = startSeq;
    this.markLines.push(0);
    this.markSeqs.push(startSeq);
  }

  /** Seq up to which bytes were indexed. */
  get indexedTo(): number {
    return this.scanned;
  }

  /** LFs in the indexed bytes (lines `0..lfCount` exist, the last maybe still empty). */
  get lfCount(): number {
    return this.lfs;
  }

  /** True when the indexed bytes end with an LF (or are none): the next byte starts a line. */
  get atLineStart(): boolean {
    return this.lastByteLf;
  }

  /** Indexes `data` at `seq`; bytes before {@link indexedTo} are skipped (already seen). */
  scan(seq: number, data: Uint8Array): void {
    const skip = this.scanned - seq;
    if (skip >= data.length) return;
    if (skip < 0) throw new RangeError(`line index: bytes at ${seq} leave a gap after ${this.scanned}`);
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    let i = buf.indexOf(LF, skip);
    while (i >= 0) {
      this.lfs++;
      const start = seq + i + 1;
      if (
        this.lfs - this.lastMarkLine >= LINE_MARK_EVERY &&
        start - this.lastMarkSeq >= LINE_MARK_MIN_BYTES
      ) {
        this.markLines.push(this.lfs);
        this.markSeqs.push(start);
        this.lastMarkLine = this.lfs;
        this.lastMarkSeq = start;
      }
      i = buf.indexOf(LF, i + 1);
    }
    this.lastByteLf = buf[buf.length - 1] === LF;
    this.scanned = seq + buf.length;
  }

  /** Forgets marks before `seq` (the log dropped those bytes). */
  dropBefore(seq: number): void {
    let n = 0;
    while (n < this.markSeqs.length && this.markSeqs[n] < seq) n++;
    if (n === 0) return;
    this.markLines.splice(0, n);
    this.markSeqs.splice(0, n);
  }

  /** The latest mark at or before `line`, or undefined when every mark is later. */
  markAtOrBefore(line: number): LineMark | undefined {
    let lo = 0;
    let hi = this.markLines.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.markLines[mid] <= line) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found < 0 ? undefined : { line: this.markLines[found], seq: this.markSeqs[found] };
  }
}
