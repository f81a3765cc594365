/** Bytes per storage chunk; a chunk is freed once every row in it has been evicted. */
const CHUNK_BYTES = 64 * 1024;
const INITIAL_INDEX = 256;
const FLAG_SEPARATOR = 1;
const FLAG_FULL = 2;
const CRLF = '\r\n';
const CRLF_BYTES = Buffer.from(CRLF);

/**
 * The rows that scrolled off a session's screen model, kept as the VT text that redraws them
 * (characters and SGR) instead of as emulator cells. An 80-column emulator row costs ~1–2 KB;
 * here a row costs its text plus 9 bytes of index, so a full 10,000-row scrollback of typical
 * output fits in well under a megabyte.
 *
 * Each row is stored with the separator that joins it to the row before it ("\r\n", or nothing
 * when it continues a full, soft-wrapped row), so rendering the last n rows is one byte copy.
 */
export class CompactScrollback {
  private chunks: Buffer[] = [];
  /** Absolute byte offset of chunks[0][0]. */
  private base = 0;
  /** Absolute byte offset just after the last stored byte. */
  private end = 0;
  /** Ring of absolute start offsets (separator included) and flags of the live rows. */
  private starts = new Float64Array(0);
  private flags = new Uint8Array(0);
  private head = 0;
  private count = 0;

  constructor(private maxRows: number) {
    if (!Number.isInteger(maxRows) || maxRows < 0)
      throw new RangeError('maxRows must be a non-negative integer');
  }

  get rows(): number {
    return this.count;
  }

  /** Most rows kept. */
  get capacity(): number {
    return this.maxRows;
  }

  /** Bytes held in storage chunks (what this store costs, index aside). */
  get storedBytes(): number {
    return this.chunks.length * CHUNK_BYTES;
  }

  /** Whether the row `fromEnd` rows before the newest fills its line (a wrapped continuation joins it). */
  isFull(fromEnd: number): boolean {
    return fromEnd < this.count && (this.flags[this.slot(this.count - 1 - fromEnd)] & FLAG_FULL) !== 0;
  }

  /**
   * Appends a row. `wrapped`: the row continues the previous line (soft wrap); `full`: its last
   * column holds a character, so a following wrapped row can join it without a line break.
   */
  push(text: string, wrapped: boolean, full: boolean): void {
    if (this.maxRows === 0) return;
    this.startRow(wrapped, full);
    this.writeText(text);
    while (this.count > this.maxRows) this.dropOldest();
  }

  /** `push` for a row already encoded as UTF-8 (the first `length` bytes of `bytes`). */
  pushBytes(bytes: Uint8Array, length: number, wrapped: boolean, full: boolean): void {
    if (this.maxRows === 0) return;
    this.startRow(wrapped, full);
    this.writeBytes(bytes, length);
    while (this.count > this.maxRows) this.dropOldest();
  }

  private startRow(wrapped: boolean, full: boolean): void {
    const separated = this.count > 0 && !(wrapped && this.isFull(0));
    if (this.count === this.starts.length) this.growIndex();
    const slot = this.slot(this.count);
    this.starts[slot] = this.end;
    this.flags[slot] = (separated ? FLAG_SEPARATOR : 0) | (full ? FLAG_FULL : 0);
    this.count++;
    if (separated) this.writeBytes(CRLF_BYTES, CRLF_BYTES.length);
  }

  /** Removes the newest `n` rows (they are about to be stored again, e.g. after a reflow). */
  dropNewest(n: number): void {
    const k = Math.min(n, this.count);
    if (k === 0) return;
    if (k === this.count) {
      this.clear();
      return;
    }
    this.count -= k;
    this.end = this.starts[this.slot(this.count)];
    const needed = Math.ceil((this.end - this.base) / CHUNK_BYTES);
    this.chunks.length = Math.max(needed, 0);
  }

  clear(): void {
    this.chunks = [];
    this.base = this.end = 0;
    this.head = this.count = 0;
    this.starts = new Float64Array(0);
    this.flags = new Uint8Array(0);
  }

  setMaxRows(n: number): void {
    this.maxRows = n;
    while (this.count > this.maxRows) this.dropOldest();
  }

  /**
   * `n` rows as VT text (the first carries no leading separator): the newest ones by default, or
   * the ones just older than the newest `skipNewest`.
   */
  render(n: number = this.count, skipNewest = 0): string {
    const last = this.count - Math.min(skipNewest, this.count);
    const take = Math.max(0, Math.min(n, last));
    if (take === 0) return '';
    const first = this.slot(last - take);
    const skip = this.flags[first] & FLAG_SEPARATOR ? CRLF.length : 0;
    const to = last === this.count ? this.end : this.starts[this.slot(last)];
    return this.read(this.starts[first] + skip, to).toString('utf8');
  }

  private slot(i: number): number {
    return (this.head + i) % this.starts.length;
  }

  private growIndex(): void {
    // One slot beyond maxRows: a push lands before the oldest row is dropped.
    const size = Math.min(Math.max(INITIAL_INDEX, this.starts.length * 2), this.maxRows + 1);
    const starts = new Float64Array(size);
    const flags = new Uint8Array(size);
    for (let i = 0; i < this.count; i++) {
      const s = this.slot(i);
      starts[i] = this.starts[s];
      flags[i] = this.flags[s];
    }
    this.starts = starts;
    this.flags = flags;
    this.head = 0;
  }

  private dropOldest(): void {
    this.head = (this.head + 1) % this.starts.length;
    this.count--;
    const keepFrom = this.count > 0 ? this.starts[this.head] : this.end;
    while (this.chunks.length > 0 && this.base + CHUNK_BYTES <= keepFrom) {
      this.chunks.shift();
      this.base += CHUNK_BYTES;
    }
    if (this.count === 0) this.clear();
  }

  private writeText(text: string): void {
    if (text.length === 0) return;
    const within = (this.end - this.base) % CHUNK_BYTES;
    const room = this.end - this.base === this.chunks.length * CHUNK_BYTES ? 0 : CHUNK_BYTES - within;
    // Common case: straight into the current chunk, no intermediate buffer.
    if (text.length * 3 <= room) {
      this.end += this.chunks[this.chunks.length - 1].write(text, within, 'utf8');
      return;
    }
    const bytes = Buffer.from(text, 'utf8');
    this.writeBytes(bytes, bytes.length);
  }

  private writeBytes(bytes: Uint8Array, length: number): void {
    let done = 0;
    while (done < length) {
      const within = (this.end - this.base) % CHUNK_BYTES;
      if (within === 0 && this.end - this.base === this.chunks.length * CHUNK_BYTES)
        this.chunks.push(Buffer.allocUnsafe(CHUNK_BYTES));
      const chunk = this.chunks[this.chunks.length - 1];
      const n = Math.min(length - done, CHUNK_BYTES - within);
      chunk.set(bytes.subarray(done, done + n), within);
      done += n;
      this.end += n;
    }
  }

  private read(from: number, to: number): Buffer {
    const out = Buffer.allocUnsafe(to - from);
    let pos = from;
    while (pos < to) {
      const rel = pos - this.base;
      const chunk = this.chunks[Math.floor(rel / CHUNK_BYTES)];
      const within = rel % CHUNK_BYTES;
      const n = Math.min(to - pos, CHUNK_BYTES - within);
      chunk.copy(out, pos - from, within, within + n);
      pos += n;
    }
    return out;
  }
}
