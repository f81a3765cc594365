import { close, promises as fsp, open, rm, unlink, writev } from 'node:fs';
import { join } from 'node:path';
import { QuietTimer } from '../flow/quiet-timer.js';
import { LineIndex } from './line-index.js';

/** One write (a writev of the queued chunks) to a segment file takes at most this much. */
const WRITE_MAX_BYTES = 1024 * 1024;
/**
 * Appends smaller than a write wait for company until the output pauses this long, or
 * WRITE_MAX_DELAY_MS after the first of them at the latest: typing costs one disk write per pause
 * instead of one every few keys (a fixed 10 ms wait wrote every fifth key at one key per 2 ms),
 * and the write (a thread-pool hand-off and its completion) never competes with the echoes of a
 * burst. A crash of the daemon loses at most WRITE_MAX_DELAY_MS of the log.
 */
export const WRITE_DELAY_MS = 10;
export const WRITE_MAX_DELAY_MS = 100;
/**
 * When a write ends, at least this much queued goes out at once; less waits for the delay. A
 * flood's next write used to take whatever one PTY read had added meanwhile (4 KiB): one write and
 * one thread-pool wakeup per chunk (the daemon's main thread spent a fifth of a flood queueing
 * them). Writing every 64 KiB as it arrives instead cost as much again in queued writes.
 */
const WRITE_CHAIN_BYTES = 64 * 1024;
/** Chunks in one writev (Linux's IOV_MAX is 1024). */
const WRITE_MAX_CHUNKS = 512;
/** History files: the owner only (they hold everything the terminal printed). */
export const HISTORY_FILE_MODE = 0o600;

/** A segment file: the bytes `[start, start + length)` of a session's output. */
interface Segment {
  start: number;
  length: number;
  /** Bytes already on disk (the rest are in `unwritten`, the first of them maybe in flight). */
  written: number;
  unwritten: Buffer[];
  path: string;
  fd?: number;
  createdAt: number;
  dropped: boolean;
  /** The number of the line its first byte belongs to, and whether that byte starts it (set once indexed). */
  firstLine?: number;
  startsLine?: boolean;
}

/** What a line reader needs of a log: its index caught up to `head`, and where its lines begin. */
export interface LogLineView {
  index: LineIndex;
  /** Seq after the last indexed byte: the view's end. */
  head: number;
  /** Oldest seq held. */
  start: number;
  /** The first line held whole (a line that began in a dropped segment is not). */
  firstLine: number;
  /** The line `start` belongs to (`firstLine` or the one before it). */
  lineAtStart: number;
}

/** What a log tells its store (host-wide accounting and warnings). */
export interface SessionLogOwner {
  /** The log holds `delta` more (or, negative, fewer) bytes. */
  resized(log: SessionLog, delta: number): void;
  /** A new segment began (a good moment to check the host-wide cap). */
  rolled(log: SessionLog): void;
  /** Writing failed: the log is gone, the session keeps its RAM ring. */
  failed(log: SessionLog, err: NodeJS.ErrnoException): void;
}

export interface SessionLogLimits {
  segmentBytes: number;
  sessionBytes: number;
}

/**
 * A session's output history on disk: append-only segment files named by the seq of their first
 * byte. `append` never waits for the disk: bytes queue in memory and one write at a time takes
 * them (joined up to 1 MiB) to the current segment. Reads serve any range still held, from the
 * files and from what is still queued. The oldest segment is dropped when the session's cap (or
 * the store, for the host-wide cap) needs room. A failed write ends the log: it frees its queue,
 * deletes its files and tells the owner, and the session goes on with its RAM ring.
 */
export class SessionLog {
  private readonly segments: Segment[] = [];
  private headSeq: number;
  private held = 0;
  /** The segment whose open or write is in flight (one at a time). */
  private writingTo: Segment | undefined;
  private failure: NodeJS.ErrnoException | undefined;
  private destroyed = false;
  private onIdle: (() => void)[] = [];
  /** Writes issued to the segment files (for tests and the bench). */
  writes = 0;
  private readonly writeTimer = new QuietTimer(
    WRITE_DELAY_MS,
    WRITE_MAX_DELAY_MS,
    () => this.writeNext(),
    true,
  );
  private readonly index: LineIndex;

  constructor(
    readonly dir: string,
    startSeq: number,
    private readonly limits: SessionLogLimits,
    private readonly owner: SessionLogOwner,
  ) {
    this.headSeq = startSeq;
    this.index = new LineIndex(startSeq);
  }

  /**
   * The line index caught up with everything appended so far (the write-behind indexes what it
   * writes; the newest bytes, still queued, are indexed here), for paging by line (log-lines.ts).
   */
  lines(): LogLineView {
    this.indexThrough(this.headSeq);
    const first = this.segments[0];
    const lineAtStart = first?.firstLine ?? this.index.lfCount;
    const whole = first ? first.startsLine !== false : true;
    return {
      index: this.index,
      head: this.index.indexedTo,
      start: this.start,
      firstLine: whole ? lineAtStart : lineAtStart + 1,
      lineAtStart,
    };
  }

  /** Oldest seq held (the head when nothing is). */
  get start(): number {
    return this.segments[0]?.start ?? this.headSeq;
  }

  get head(): number {
    return this.headSeq;
  }

  /** Bytes the log holds (on disk and queued). */
  get bytes(): number {
    return this.held;
  }

  /** Bytes queued for the disk. */
  get queued(): number {
    let n = 0;
    for (const s of this.segments) n += s.length - s.written;
    return n;
  }

  get healthy(): boolean {
    return this.failure === undefined && !this.destroyed;
  }

  get segmentCount(): number {
    return this.segments.length;
  }

  /** When the oldest segment began (for the host-wide cap: oldest first across sessions). */
  get oldestAt(): number {
    return this.segments[0]?.createdAt ?? Number.POSITIVE_INFINITY;
  }

  append(data: Uint8Array): void {
    if (!this.healthy || data.length === 0) return;
    let cur = this.segments[this.segments.length - 1];
    if (!cur || cur.length >= this.limits.segmentBytes) cur = this.roll();
    // No copy: PTY chunks are fresh buffers nobody writes to again (the ring copies what it keeps,
    // and the model feeder holds the same chunks as they are); the write takes them within ms.
    cur.unwritten.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    cur.length += data.length;
    this.headSeq += data.length;
    this.held += data.length;
    this.owner.resized(this, data.length);
    this.scheduleWrite();
  }

  /** The bytes `[from, to)`; `undefined` when any of them is no longer held (or the log failed). */
  async read(from: number, to: number): Promise<Buffer | undefined> {
    if (!this.healthy || from < this.start || to > this.headSeq || from > to) return undefined;
    // What is still queued is copied now; what is on disk stays there (a file's bytes never change).
    const parts: (Buffer | { path: string; offset: number; length: number })[] = [];
    for (const seg of this.segments) {
      const a = Math.max(from, seg.start) - seg.start;
      const b = Math.min(to, seg.start + seg.length) - seg.start;
      if (a >= b) continue;
      const onDisk = Math.min(b, seg.written);
      if (a < onDisk) parts.push({ path: seg.path, offset: a, length: onDisk - a });
      if (b > seg.written)
        parts.push(copyQueued(seg, Math.max(a, seg.written) - seg.written, b - seg.written));
    }
    const out: Buffer[] = [];
    for (const p of parts) {
      if (Buffer.isBuffer(p)) out.push(p);
      else {
        const got = await readFileRange(p.path, p.offset, p.length);
        if (!got) return undefined; // dropped (or the log failed) meanwhile
        out.push(got);
      }
    }
    return Buffer.concat(out);
  }

  /** Drops the oldest segment (never the one being appended to); false when there is none to drop. */
  dropOldest(): boolean {
    if (this.segments.length < 2) return false;
    // Lines are counted from the first byte: bytes never written (a flood outran the disk) are indexed before they go.
    this.indexThrough(this.segments[0].start + this.segments[0].length);
    const seg = this.segments.shift() as Segment;
    this.index.dropBefore(this.start);
    this.release(seg);
    this.unlinkDropped(seg);
    return true;
  }

  private unlinkDropped(seg: Segment): void {
    unlink(seg.path, (err) => {
      if (err && err.code !== 'ENOENT') this.owner.failed(this, err);
    });
  }

  /** Resolves once every queued byte is on disk (or the log failed). For tests and the bench. */
  flushed(): Promise<void> {
    if (this.writeTimer.armed) this.writeNow();
    if (!this.writingTo && this.queued === 0) return Promise.resolve();
    return new Promise((r) => this.onIdle.push(r));
  }

  /** Removes the log's files (the session is gone). */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.cancelWrite();
    for (const seg of this.segments.splice(0)) this.release(seg);
    rm(this.dir, { recursive: true, force: true }, () => {
      // Nothing to do either way: the store's sweep at the next start removes what is left.
    });
    this.idle();
  }

  private roll(): Segment {
    while (this.segments.length > 0 && this.held + this.limits.segmentBytes > this.limits.sessionBytes) {
      if (!this.dropOldest()) break;
    }
    // The newest segment is complete now: its file stays open only while a write to it is queued
    // (the end of that write closes it), or every segment written while newest kept a descriptor.
    const prev = this.segments.at(-1);
    if (prev && prev.written === prev.length) this.closeUnlessWriting(prev);
    const seg: Segment = {
      start: this.headSeq,
      length: 0,
      written: 0,
      unwritten: [],
      path: join(this.dir, `${String(this.headSeq).padStart(16, '0')}.seg`),
      createdAt: Date.now(),
      dropped: false,
    };
    this.segments.push(seg);
    this.owner.rolled(this);
    return seg;
  }

  private release(seg: Segment): void {
    seg.dropped = true;
    seg.unwritten = [];
    this.held -= seg.length;
    this.owner.resized(this, -seg.length);
    this.closeUnlessWriting(seg);
  }

  /** Closes a segment's file unless its open or write is in flight (whose end closes it). */
  private closeUnlessWriting(seg: Segment): void {
    if (seg !== this.writingTo) this.closeFd(seg);
  }

  private closeFd(seg: Segment): void {
    const fd = seg.fd;
    seg.fd = undefined;
    if (fd !== undefined) close(fd, () => {});
  }

  /** A write now when a full one is queued (or one is in flight: its end writes more), else once the output pauses. */
  private scheduleWrite(): void {
    if (this.writingTo) return;
    if (this.queued >= WRITE_MAX_BYTES) this.writeNow();
    else this.writeTimer.poke();
  }

  private writeNow(): void {
    this.cancelWrite();
    this.writeNext();
  }

  private cancelWrite(): void {
    this.writeTimer.cancel();
  }

  /** One write in flight at a time, oldest queued bytes first. */
  private writeNext(): void {
    if (this.writingTo || !this.healthy) return;
    const seg = this.segments.find((s) => s.written < s.length);
    if (!seg) {
      this.idle();
      return;
    }
    this.writingTo = seg;
    if (seg.fd === undefined) {
      open(seg.path, 'a', HISTORY_FILE_MODE, (err, fd) => {
        this.writingTo = undefined;
        if (err) return this.fail(err);
        if (seg.dropped || !this.healthy) {
          close(fd, () => {});
          // The drop's unlink may have run before this open created the file: unlink it again.
          if (seg.dropped && !this.destroyed) this.unlinkDropped(seg);
          return this.writeNext();
        }
        seg.fd = fd;
        this.writeNext();
      });
      return;
    }
    const chunks: Buffer[] = [];
    let n = 0;
    for (const c of seg.unwritten) {
      if (n > 0 && (n + c.length > WRITE_MAX_BYTES || chunks.length >= WRITE_MAX_CHUNKS)) break;
      chunks.push(c);
      n += c.length;
    }
    // The chunks as they are (one writev, no joined copy: a flood's copies were most of the
    // daemon's garbage), each indexed before it is written.
    let at = seg.start + seg.written;
    for (const c of chunks) {
      this.indexBytes(seg, at, c);
      at += c.length;
    }
    this.writes++;
    writev(seg.fd, chunks, (err, wrote) => {
      this.writingTo = undefined;
      if (err) return this.fail(err);
      if (seg.dropped) {
        this.closeFd(seg);
        return this.writeNext();
      }
      seg.written += wrote;
      consume(seg, wrote);
      // A full segment that is no longer the newest is complete: close it.
      if (seg.written === seg.length && seg !== this.segments[this.segments.length - 1]) this.closeFd(seg);
      this.afterWrite();
    });
  }

  /** After a write: more at once when enough is queued or someone waits for the disk, else soon. */
  private afterWrite(): void {
    const queued = this.queued;
    if (queued >= WRITE_CHAIN_BYTES || (queued > 0 && this.onIdle.length > 0)) this.writeNext();
    else if (queued > 0) this.scheduleWrite();
    else this.idle();
  }

  /** Indexes the queued bytes up to `seq` that the index has not seen yet. */
  private indexThrough(seq: number): void {
    for (const seg of this.segments) {
      const from = this.index.indexedTo;
      const end = Math.min(seq, seg.start + seg.length);
      if (from >= end) continue;
      // Every written byte was indexed before its write: the rest is still queued in memory.
      const a = from - seg.start - seg.written;
      this.indexBytes(seg, from, copyQueued(seg, a, end - seg.start - seg.written));
    }
  }

  private indexBytes(seg: Segment, seq: number, bytes: Uint8Array): void {
    if (seq === seg.start && seg.firstLine === undefined) {
      seg.firstLine = this.index.lfCount;
      seg.startsLine = this.index.atLineStart;
    }
    this.index.scan(seq, bytes);
  }

  private fail(err: NodeJS.ErrnoException): void {
    if (this.failure || this.destroyed) return;
    this.failure = err;
    this.cancelWrite();
    for (const seg of this.segments.splice(0)) this.release(seg);
    // A full disk gets its space back; a read-only one keeps the files until the next start's sweep.
    rm(this.dir, { recursive: true, force: true }, () => {});
    this.owner.failed(this, err);
    this.idle();
  }

  private idle(): void {
    for (const r of this.onIdle.splice(0)) r();
  }
}

/** Removes the first `n` queued bytes of a segment (they were written). */
function consume(seg: Segment, n: number): void {
  let left = n;
  while (left > 0 && seg.unwritten.length > 0) {
    const c = seg.unwritten[0];
    if (c.length <= left) {
      seg.unwritten.shift();
      left -= c.length;
    } else {
      seg.unwritten[0] = c.subarray(left);
      left = 0;
    }
  }
}

/** A copy of the queued bytes `[a, b)` (offsets past what is written). */
function copyQueued(seg: Segment, a: number, b: number): Buffer {
  const out = Buffer.allocUnsafe(b - a);
  let pos = 0;
  let o = 0;
  for (const c of seg.unwritten) {
    const s = Math.max(a, pos);
    const e = Math.min(b, pos + c.length);
    if (s < e) {
      c.copy(out, o, s - pos, e - pos);
      o += e - s;
    }
    pos += c.length;
    if (pos >= b) break;
  }
  return out;
}

/** `length` bytes at `offset` of a file; `undefined` when the file is gone or shorter. */
async function readFileRange(path: string, offset: number, length: number): Promise<Buffer | undefined> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
      if (bytesRead === 0) return undefined;
      got += bytesRead;
    }
    return buf;
  } finally {
    await fh.close();
  }
}
