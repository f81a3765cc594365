import { QuietTimer } from '../flow/quiet-timer.js';
import { droppedExternal } from './idle-gc.js';

/** Pending output above this is a flood: feed the model in spaced batches and skip what cannot matter. */
const FLOOD_BYTES = 64 * 1024;
/** A flood's pending output is copied into slabs of this size (above glibc's 128 KiB mmap threshold). */
const SLAB_BYTES = 128 * 1024;
/** Minimum pause between batches of a flood the model must parse in full (escape-heavy output). */
const MIN_FLOOD_INTERVAL_MS = 16;
/** ...and the pause as a multiple of the last batch's parse time: the model then needs ≤ 1/3 core. */
const FLOOD_DUTY_FACTOR = 2;
/**
 * A flood whose backlog skipping keeps small (line output) is fed when the output pauses for
 * LAZY_IDLE_MS, or after LAZY_FLOOD_INTERVAL_MS at the latest: its batches cost the same whenever
 * they run (the retained lines), so running them rarely gives the CPU to delivery. A snapshot
 * flushes first, so the model is never stale when it is read.
 */
const LAZY_IDLE_MS = 100;
const LAZY_FLOOD_INTERVAL_MS = 5000;
/** A backlog above this is not kept small by skipping: feed it at the eager pace. */
const LAZY_BACKLOG_BYTES = 4 * 1024 * 1024;
/**
 * Output below a flood goes to the model's worker once it pauses this long, or SETTLE_MAX_MS
 * after it began at the latest: a keystroke's echo then leaves the daemon without a worker
 * hand-off before it, and typing wakes the worker once per pause, not every few keys (at one key
 * per 2 ms a fixed 5 ms wait woke it, and its reply woke the daemon, every 2–3 keys). A snapshot
 * or read flushes first, so the model is never read stale.
 */
export const SETTLE_MS = 5;
export const SETTLE_MAX_MS = 100;
/** Pending output the model may hold before the PTY is paused (only reached with escape-heavy floods). */
export const MODEL_PENDING_HARD_LIMIT = 32 * 1024 * 1024;
/**
 * Pending output is checked for what can no longer matter each time it grew by this much, or by
 * four times what the last check kept (the check scans what it keeps), at most MAX_SKIP_CHECK_BYTES.
 */
const SKIP_CHECK_BYTES = 256 * 1024;
const MAX_SKIP_CHECK_BYTES = 8 * 1024 * 1024;
/** Colour state carried over from skipped output is kept up to this size (else skipping stops). */
const MAX_PRELUDE_BYTES = 4096;

const NEWLINE = 0x0a;
const ESC = 0x1b;

export interface ModelSink {
  /**
   * `owned`: `data` is a buffer of the feeder's own, which nothing else refers to: it may be
   * transferred to the worker instead of copied.
   */
  post(seq: number, data: Uint8Array, owned: boolean): void;
  /** Pause (true) or resume (false) the producer because the model is too far behind. */
  backpressure(on: boolean): void;
}

/**
 * Length of the SGR sequence (`ESC [ digits ; : m`) at `i`, or 0 when something else starts
 * there (or the sequence is cut off by the end of the buffer).
 */
export function sgrLength(b: Uint8Array, i: number): number {
  if (b[i] !== ESC || b[i + 1] !== 0x5b) return 0;
  for (let j = i + 2; j < b.length; j++) {
    const c = b[j];
    if (c === 0x6d) return j - i + 1;
    if (!((c >= 0x30 && c <= 0x39) || c === 0x3b || c === 0x3a)) return 0;
  }
  return 0;
}

/** `parts` joined into a new buffer of its own (not a slice of Node's shared pool). */
function joined(parts: readonly Uint8Array[], bytes: number): Buffer {
  const out = Buffer.allocUnsafeSlow(bytes);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** True for `ESC [ m` and `ESC [ 0 m`: everything before it no longer affects the attributes. */
function isReset(seq: Uint8Array): boolean {
  return seq.length === 3 || (seq.length === 4 && seq[2] === 0x30);
}

/**
 * Feeds the screen model from the session's output without ever making the PTY reader wait.
 * During a flood it batches and spaces the batches out so the model does not eat a core, and
 * drops a prefix of pending line output when what follows holds more lines than the model
 * retains (scrollback + screen): the dropped text would have scrolled out of the model anyway.
 * The prefix may contain colour changes (SGR), which are kept and replayed (the model's
 * attributes stay exact); any other escape sequence ends the skippable prefix. So the model's
 * state is the same as if it had parsed every byte.
 */
export class ModelFeeder {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  /** Where a flood's pending output is copied to (see {@link keep}), and how much of it is used. */
  private slab: Buffer | undefined;
  private slabUsed = 0;
  /** Slabs pending output may refer to, oldest first (the current one last). */
  private slabs: Buffer[] = [];
  /**
   * Slabs nothing refers to any more, for {@link keep} to reuse, until the output pauses (a line
   * flood's lazy feed runs) or the model caught up with nothing pending. It never holds more than
   * were in use at once: slabs enter it only when skipping or a batch released them. Not letting
   * them go saves a page fault per 4 KiB of fresh memory (about 13 µs each on a VM here) and, more,
   * the full collections V8 needs to reclaim dropped external memory: capped at 8, a 100-byte-line
   * flood that keeps 10,000 rows dropped ~30 slabs per skip and the daemon ran 19 full collections
   * per 200 MB instead of 1 (about 2 ms of CPU per MB on V8's helper threads, Node 24).
   */
  private freeSlabs: Buffer[] = [];
  private pendingFrom = 0;
  /** SGR sequences of skipped output, replayed before the next batch. */
  private prelude: Uint8Array[] = [];
  private preludeBytes = 0;
  private inFlightUntil = -1;
  private batchStartedAt = 0;
  private lastBatchMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private lazyTimer = false;
  /** The wait of small output (SETTLE_MS, SETTLE_MAX_MS). */
  private readonly settle = new QuietTimer(SETTLE_MS, SETTLE_MAX_MS, () => this.flush());
  /** Pushes so far, and when the lazy wait started: tells a paused flood from a running one. */
  private pushes = 0;
  private pushesAtCheck = 0;
  private lazySince = 0;
  private paused = false;
  /** pendingBytes when trySkip last ran, and the growth that triggers the next run. */
  private checkedAt = 0;
  private checkEvery = SKIP_CHECK_BYTES;
  skippedBytes = 0;

  constructor(
    private readonly sink: ModelSink,
    private retainedLines: number,
  ) {}

  /** Output held back from the model (after skipping). */
  get backlog(): number {
    return this.pendingBytes;
  }

  setRetainedLines(n: number): void {
    this.retainedLines = n;
  }

  push(seq: number, data: Uint8Array): void {
    this.pushes++;
    if (this.pendingBytes === 0) this.pendingFrom = seq;
    this.keep(data);
    this.pendingBytes += data.length;
    if (this.pendingBytes - this.checkedAt >= this.checkEvery) {
      this.trySkip();
      this.checkedAt = this.pendingBytes;
    }
    if (this.inFlightUntil < 0 && !this.timer) {
      if (this.pendingBytes < FLOOD_BYTES) this.settle.poke();
      else {
        this.settle.cancel();
        this.schedule();
      }
    } else if (this.lazyTimer && this.pendingBytes > LAZY_BACKLOG_BYTES) {
      this.trySkip();
      this.checkedAt = this.pendingBytes;
      if (this.pendingBytes > LAZY_BACKLOG_BYTES) {
        // Skipping does not keep this backlog small: back to the eager pace.
        this.cancelTimer();
        if (this.inFlightUntil < 0) this.flush();
      }
    }
    if (this.pendingBytes > MODEL_PENDING_HARD_LIMIT && !this.paused) {
      this.trySkip();
      if (this.pendingBytes > MODEL_PENDING_HARD_LIMIT) {
        this.paused = true;
        this.sink.backpressure(true);
      }
    }
  }

  /**
   * Adds `data` to the pending output. Below a flood the PTY's chunks are kept as they are; in a
   * flood they are copied into large slabs, so that the many small read buffers die at once: held
   * for seconds by fifty flooding sessions, they left the allocator's heap fragmented long after
   * (glibc returns only its top). A slab no pending output lies in is reused (see
   * {@link recycleSlabs}); one that is not kept goes back to the system whole once its last view is
   * collected, being larger than glibc's mmap threshold.
   */
  private keep(data: Uint8Array): void {
    if (this.pendingBytes < FLOOD_BYTES || data.length >= SLAB_BYTES / 4) {
      this.pending.push(data);
      return;
    }
    if (!this.slab || this.slabUsed + data.length > this.slab.length) {
      this.slab = this.freeSlabs.pop() ?? Buffer.allocUnsafeSlow(SLAB_BYTES);
      this.slabUsed = 0;
      this.slabs.push(this.slab);
    }
    const start = this.slabUsed;
    this.slab.set(data, start);
    this.slabUsed += data.length;
    const last = this.pending[this.pending.length - 1];
    const slab = this.slab;
    if (last && last.buffer === slab.buffer && last.byteOffset + last.length === slab.byteOffset + start) {
      this.pending[this.pending.length - 1] = slab.subarray(last.byteOffset - slab.byteOffset, this.slabUsed);
    } else {
      this.pending.push(slab.subarray(start, this.slabUsed));
    }
  }

  /** The model finished parsing everything up to `seq`. */
  progress(seq: number): void {
    if (seq < this.inFlightUntil) return;
    this.inFlightUntil = -1;
    this.lastBatchMs = Date.now() - this.batchStartedAt;
    if (this.pendingBytes === 0) {
      this.dropFreeSlabs();
      return;
    }
    if (this.pendingBytes >= FLOOD_BYTES) this.schedule();
    else this.settle.poke();
  }

  /** Send everything now (before a snapshot, which queues behind it in the worker). */
  flushAll(): void {
    this.cancelTimer();
    this.flush();
  }

  dispose(): void {
    this.cancelTimer();
    this.pending = [];
    this.pendingBytes = 0;
    this.slab = undefined;
    this.slabs = [];
    this.freeSlabs = [];
    this.prelude = [];
    this.preludeBytes = 0;
  }

  /**
   * The model worker was lost with what was in flight: the model restarts from the log, which
   * holds everything pushed so far, so nothing pending is sent; output pushed from now on is.
   */
  restart(): void {
    this.dispose();
    this.checkedAt = 0;
    this.inFlightUntil = -1;
    if (this.paused) {
      this.paused = false;
      this.sink.backpressure(false);
    }
  }

  private cancelTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.lazyTimer = false;
    this.settle.cancel();
  }

  private schedule(): void {
    if (this.timer) return;
    this.trySkip();
    this.checkedAt = this.pendingBytes;
    this.lazyTimer = this.pendingBytes <= LAZY_BACKLOG_BYTES;
    if (this.lazyTimer) {
      this.lazySince = Date.now();
      this.pushesAtCheck = this.pushes;
      this.timer = setTimeout(() => this.lazyCheck(), LAZY_IDLE_MS);
      return;
    }
    const wait = Math.max(MIN_FLOOD_INTERVAL_MS, this.lastBatchMs * FLOOD_DUTY_FACTOR);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, wait);
  }

  /** Feeds a lazy backlog once the output paused, or when it waited long enough. */
  private lazyCheck(): void {
    this.timer = undefined;
    const flowing = this.pushes !== this.pushesAtCheck;
    if (flowing && Date.now() - this.lazySince < LAZY_FLOOD_INTERVAL_MS) {
      this.pushesAtCheck = this.pushes;
      this.timer = setTimeout(() => this.lazyCheck(), LAZY_IDLE_MS);
      return;
    }
    this.lazyTimer = false;
    this.flush();
    this.dropFreeSlabs();
  }

  /**
   * The output paused or the model caught up: the slabs kept for reuse go back to the allocator.
   * What every session's feed dropped is counted together (idle-gc.ts) and collected soon once it
   * adds up: a daemon whose sessions went quiet allocates nothing that would make V8 collect it.
   */
  private dropFreeSlabs(): void {
    if (this.freeSlabs.length > 0) droppedExternal(this.freeSlabs.length * SLAB_BYTES);
    this.freeSlabs = [];
  }

  private flush(): void {
    if (this.pendingBytes === 0) return;
    this.trySkip();
    const parts = this.preludeBytes > 0 ? [...this.prelude, ...this.pending] : this.pending;
    const bytes = this.preludeBytes + this.pendingBytes;
    // A PTY chunk on its own goes as it is (copied by postMessage: the log and the batcher hold
    // it too). Anything else is joined into a buffer of the feeder's own, never a pooled one,
    // which the worker then takes over: no copy, and nothing allocated in the worker's arena.
    const single = parts.length === 1 && parts[0].byteLength === parts[0].buffer.byteLength;
    const data = single ? parts[0] : joined(parts, bytes);
    // The replayed colour state is not stream output: the batch still ends at the stream's seq.
    const from = this.pendingFrom - this.preludeBytes;
    const end = this.pendingFrom + this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    this.prelude = [];
    this.preludeBytes = 0;
    this.checkedAt = 0;
    this.inFlightUntil = end;
    this.batchStartedAt = Date.now();
    this.sink.post(from, data, !single);
    // Joined, or copied by postMessage: no slab is referred to any more.
    this.slab = undefined;
    this.releaseSlabs(this.slabs.length);
    if (this.paused) {
      this.paused = false;
      this.sink.backpressure(false);
    }
  }

  /**
   * Drops the longest prefix that is followed by at least `retainedLines` lines and holds no
   * escape sequence other than SGR (whose sequences are kept in the prelude).
   */
  private trySkip(): void {
    const cut = this.cutOffset();
    if (cut <= 0) return;
    let skipped = 0;
    while (this.pending.length > 0 && skipped < cut) {
      const chunk = this.pending[0];
      const take = Math.min(chunk.length, cut - skipped);
      const ok = this.skippable(chunk, take);
      if (ok === take && ok === chunk.length) this.pending.shift();
      else if (ok > 0) this.pending[0] = chunk.subarray(ok);
      skipped += ok;
      if (ok < take) break;
    }
    if (skipped === 0) return;
    this.checkEvery = Math.min(
      MAX_SKIP_CHECK_BYTES,
      Math.max(SKIP_CHECK_BYTES, 4 * (this.pendingBytes - skipped)),
    );
    this.pendingBytes -= skipped;
    this.checkedAt = Math.max(0, this.checkedAt - skipped);
    this.pendingFrom += skipped;
    this.skippedBytes += skipped;
    this.recycleSlabs();
  }

  /**
   * Slabs are filled in the order output arrives and skipping drops output from the front, so
   * the slabs before the one the first pending slab view lies in are no longer referred to.
   */
  private recycleSlabs(): void {
    if (this.slabs.length <= 1) return;
    let first = this.slabs.length - 1;
    for (const chunk of this.pending) {
      const at = this.slabs.findIndex((b) => b.buffer === chunk.buffer);
      if (at >= 0) {
        first = at;
        break;
      }
    }
    this.releaseSlabs(first);
  }

  /** The first `n` slabs are no longer referred to: keep them for reuse. */
  private releaseSlabs(n: number): void {
    for (const b of this.slabs.splice(0, n)) {
      if (b !== this.slab) this.freeSlabs.push(b);
    }
  }

  /** How many of the first `take` bytes of `chunk` can be skipped; their SGR sequences go to the prelude. */
  private skippable(chunk: Uint8Array, take: number): number {
    const head = chunk.subarray(0, take);
    let i = head.indexOf(ESC);
    while (i >= 0) {
      const n = sgrLength(chunk, i);
      if (n === 0 || i + n > take) return i;
      const seq = chunk.subarray(i, i + n);
      if (isReset(seq)) {
        this.prelude = [];
        this.preludeBytes = 0;
      }
      if (this.preludeBytes + n > MAX_PRELUDE_BYTES) return i;
      this.prelude.push(Buffer.from(seq));
      this.preludeBytes += n;
      i = head.indexOf(ESC, i + n);
    }
    return take;
  }

  /** Offset after the newline that starts the last `retainedLines + 2` lines, or -1. */
  private cutOffset(): number {
    // One spare line beyond what the model retains, so the first kept line never matters.
    const need = this.retainedLines + 2;
    let lines = 0;
    // Walk back from the end to the newline that starts the last `need` lines.
    for (let c = this.pending.length - 1; c >= 0; c--) {
      const chunk = this.pending[c];
      let i = chunk.length;
      for (;;) {
        i = chunk.lastIndexOf(NEWLINE, i - 1);
        if (i < 0) break;
        if (++lines === need) return this.offsetOf(c) + i + 1;
        if (i === 0) break;
      }
    }
    return -1;
  }

  private offsetOf(chunkIndex: number): number {
    let o = 0;
    for (let i = 0; i < chunkIndex; i++) o += this.pending[i].length;
    return o;
  }
}
