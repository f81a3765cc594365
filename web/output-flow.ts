import type { ReplayGuard } from '../provider/client/replay-guard.js';

/**
 * Acknowledge parsed output at least this often during a flood (well under the stub's 256 KiB
 * minimum credit window, so the producer never waits on the page's ack pace).
 */
const ACK_BYTES = 64 * 1024;
/**
 * Output is handed to xterm in pieces of this size, one at a time, with a turn of the event loop
 * between them: xterm parses a piece in a millisecond or two, so a flood in one terminal never
 * holds the page for long, and another terminal's echo or a keystroke gets in between.
 */
const PIECE_BYTES = 16 * 1024;
/**
 * …and at most one piece per this interval: a flood is drawn at up to ~4 MB/s per terminal (more
 * than anyone reads), which leaves the CPU to other terminals, the page and, on the same machine,
 * the relay and the programs. Measured (bench `web`): with pieces back to back the other
 * terminal's echo got slower, not faster.
 */
const PIECE_INTERVAL_MS = 4;
/**
 * Received but not parsed yet: above HIGH the page asks the relay to pause the producer (relays
 * that credit on delivery do not wait for the page's acks), below LOW it resumes.
 */
const HIGH_WATERMARK = 1024 * 1024;
const LOW_WATERMARK = 128 * 1024;

/** What the flow writes to (an xterm.js Terminal). */
export interface FlowTerminal {
  write(data: string | Uint8Array, callback?: () => void): void;
}

export interface FlowSink {
  /** The page has rendered output up to `seq` (`ptyrelay/ack`). */
  ack(seq: number): void;
  pause(on: boolean): void;
}

type Item =
  | { kind: 'data'; bytes: Uint8Array; endSeq: number; replay: boolean }
  | { kind: 'text'; text: string; replay: boolean }
  | { kind: 'call'; fn: () => void };

/**
 * The only writer of a terminal view. Output is queued and handed to xterm piece by piece (the
 * next piece after xterm parsed the previous one); parsed output is acknowledged, so a producer
 * the page cannot keep up with is held by the stub's credit window (or paused) instead of piling
 * up in the browser. Snapshots and replays go through the replay guard.
 */
export class OutputFlow {
  private queue: Item[] = [];
  private unparsed = 0;
  private parsedSeq = 0;
  private ackedSeq = 0;
  private paused = false;
  private busy = false;
  private epoch = 0;
  private disposed = false;

  constructor(
    private readonly term: FlowTerminal,
    private readonly guard: ReplayGuard | undefined,
    private readonly sink: FlowSink,
  ) {}

  /** Bytes received and not parsed yet. */
  get backlog(): number {
    return this.unparsed;
  }

  /** Output bytes ending at `endSeq`; `replay`: recorded output whose terminal reports are dropped. */
  write(bytes: Uint8Array, endSeq: number, replay = false): void {
    this.queue.push({ kind: 'data', bytes, endSeq, replay });
    this.unparsed += bytes.length;
    if (!this.paused && this.unparsed > HIGH_WATERMARK) {
      this.paused = true;
      this.sink.pause(true);
    }
    this.pump();
  }

  /** Text of the page's own (a reset, a snapshot, an exit note), in order with the output. */
  writeText(text: string, replay = false): void {
    this.queue.push({ kind: 'text', text, replay });
    this.pump();
  }

  /** Runs `fn` once everything queued so far is parsed (dropped, like the output, by a restart). */
  afterParsed(fn: () => void): void {
    this.queue.push({ kind: 'call', fn });
    this.pump();
  }

  /** Output up to `seq` that is not drawn (background tail, data gap) counts as consumed. */
  skip(seq: number): void {
    this.parsedSeq = Math.max(this.parsedSeq, seq);
    this.maybeAck();
  }

  /** The stream restarts at `seq` (a snapshot follows): output still queued is obsolete. */
  restart(seq: number): void {
    this.epoch++;
    this.busy = false;
    this.queue = [];
    this.unparsed = 0;
    this.parsedSeq = this.ackedSeq = seq;
    this.maybeResume();
  }

  private pump(): void {
    if (this.busy || this.disposed) return;
    const item = this.queue[0];
    if (!item) return;
    if (item.kind === 'call') {
      this.queue.shift();
      item.fn();
      this.pump();
      return;
    }
    let piece: Item = item;
    if (item.kind === 'data' && !item.replay && item.bytes.length > PIECE_BYTES) {
      piece = {
        ...item,
        bytes: item.bytes.subarray(0, PIECE_BYTES),
        endSeq: item.endSeq - (item.bytes.length - PIECE_BYTES),
      };
      item.bytes = item.bytes.subarray(PIECE_BYTES);
    } else this.queue.shift();
    this.busy = true;
    const epoch = this.epoch;
    const done = () => {
      if (this.disposed || epoch !== this.epoch) return;
      this.busy = false;
      if (piece.kind === 'data') {
        this.unparsed -= piece.bytes.length;
        this.parsedSeq = Math.max(this.parsedSeq, piece.endSeq);
        this.maybeAck();
      }
      // A turn of the event loop between pieces: messages, input and other terminals go first.
      if (this.queue.length > 0) setTimeout(() => this.pump(), PIECE_INTERVAL_MS);
    };
    const data = piece.kind === 'data' ? piece.bytes : piece.text;
    if (piece.replay && this.guard) void this.guard.replay(data).then(done);
    else this.term.write(data, done);
  }

  private maybeAck(): void {
    if (
      this.parsedSeq > this.ackedSeq &&
      (this.unparsed === 0 || this.parsedSeq - this.ackedSeq >= ACK_BYTES)
    ) {
      this.ackedSeq = this.parsedSeq;
      this.sink.ack(this.parsedSeq);
    }
    this.maybeResume();
  }

  private maybeResume(): void {
    if (this.paused && this.unparsed < LOW_WATERMARK) {
      this.paused = false;
      this.sink.pause(false);
    }
  }

  dispose(): void {
    this.disposed = true;
    this.queue = [];
    if (this.paused) this.sink.pause(false);
  }
}
