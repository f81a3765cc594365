/** Pending output above this is a flood: feed the model in spaced batches and skip what cannot matter. */
const FLOOD_BYTES = 64 * 1024;
/** Minimum pause between flood batches; the model then needs at most ~1/3 of a core. */
const MIN_FLOOD_INTERVAL_MS = 16;
const FLOOD_DUTY_FACTOR = 2;
/** Pending output the model may hold before the PTY is paused (only reached with escape-heavy floods). */
export const MODEL_PENDING_HARD_LIMIT = 32 * 1024 * 1024;
/** Every time pending output grows by this much, drop what can no longer matter (keeps plain floods ~256 KiB). */
const SKIP_CHECK_BYTES = 256 * 1024;

const NEWLINE = 0x0a;
const ESC = 0x1b;

export interface ModelSink {
  post(seq: number, data: Uint8Array): void;
  /** Pause (true) or resume (false) the producer because the model is too far behind. */
  backpressure(on: boolean): void;
}

/**
 * Feeds the screen model from the session's output without ever making the PTY reader wait.
 * During a flood it batches, spaces the batches out so the model does not eat a whole core, and
 * drops a prefix of pending plain text (no ESC) when what follows holds more lines than the model
 * retains (scrollback + screen): the dropped text would have scrolled out of the model anyway,
 * so the model's state is the same as if it had parsed every byte.
 */
export class ModelFeeder {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private pendingFrom = 0;
  private inFlightUntil = -1;
  private batchStartedAt = 0;
  private lastBatchMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private paused = false;
  /** pendingBytes when trySkip last ran. */
  private checkedAt = 0;
  skippedBytes = 0;

  constructor(
    private readonly sink: ModelSink,
    private retainedLines: number,
  ) {}

  setRetainedLines(n: number): void {
    this.retainedLines = n;
  }

  push(seq: number, data: Uint8Array): void {
    if (this.pendingBytes === 0) this.pendingFrom = seq;
    this.pending.push(data);
    this.pendingBytes += data.length;
    if (this.pendingBytes - this.checkedAt >= SKIP_CHECK_BYTES) {
      this.trySkip();
      this.checkedAt = this.pendingBytes;
    }
    if (this.inFlightUntil < 0 && !this.timer) {
      if (this.pendingBytes < FLOOD_BYTES) this.flush();
      else this.schedule();
    }
    if (this.pendingBytes > MODEL_PENDING_HARD_LIMIT && !this.paused) {
      this.trySkip();
      if (this.pendingBytes > MODEL_PENDING_HARD_LIMIT) {
        this.paused = true;
        this.sink.backpressure(true);
      }
    }
  }

  /** The model finished parsing everything up to `seq`. */
  progress(seq: number): void {
    if (seq < this.inFlightUntil) return;
    this.inFlightUntil = -1;
    this.lastBatchMs = Date.now() - this.batchStartedAt;
    if (this.pendingBytes === 0) return;
    if (this.pendingBytes < FLOOD_BYTES) this.flush();
    else this.schedule();
  }

  /** Send everything now (before a snapshot, which queues behind it in the worker). */
  flushAll(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flush();
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.pending = [];
    this.pendingBytes = 0;
  }

  private schedule(): void {
    if (this.timer) return;
    const wait = Math.max(MIN_FLOOD_INTERVAL_MS, this.lastBatchMs * FLOOD_DUTY_FACTOR);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, wait);
  }

  private flush(): void {
    if (this.pendingBytes === 0) return;
    this.trySkip();
    const data = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    const from = this.pendingFrom;
    this.pending = [];
    this.pendingBytes = 0;
    this.checkedAt = 0;
    this.inFlightUntil = from + data.length;
    this.batchStartedAt = Date.now();
    this.sink.post(from, data);
    if (this.paused) {
      this.paused = false;
      this.sink.backpressure(false);
    }
  }

  /** Drop the longest prefix that is free of ESC and followed by at least `retainedLines` lines. */
  private trySkip(): void {
    // One spare line beyond what the model retains, so the first kept line never matters.
    const need = this.retainedLines + 2;
    let lines = 0;
    let cut = -1;
    // Walk back from the end to the newline that starts the last `need` lines.
    outer: for (let c = this.pending.length - 1; c >= 0; c--) {
      const chunk = this.pending[c];
      let i = chunk.length;
      for (;;) {
        i = chunk.lastIndexOf(NEWLINE, i - 1);
        if (i < 0) break;
        if (++lines === need) {
          cut = this.offsetOf(c) + i + 1;
          break outer;
        }
        if (i === 0) break;
      }
    }
    if (cut <= 0) return;
    let skipped = 0;
    while (this.pending.length > 0) {
      const chunk = this.pending[0];
      const take = Math.min(chunk.length, cut - skipped);
      if (chunk.subarray(0, take).indexOf(ESC) >= 0) break;
      if (take === chunk.length) {
        this.pending.shift();
        skipped += take;
      } else {
        this.pending[0] = chunk.subarray(take);
        skipped += take;
        break;
      }
      if (skipped >= cut) break;
    }
    if (skipped === 0) return;
    this.pendingBytes -= skipped;
    this.checkedAt = Math.max(0, this.checkedAt - skipped);
    this.pendingFrom += skipped;
    this.skippedBytes += skipped;
  }

  private offsetOf(chunkIndex: number): number {
    let o = 0;
    for (let i = 0; i < chunkIndex; i++) o += this.pending[i].length;
    return o;
  }
}
