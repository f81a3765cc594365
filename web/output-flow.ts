import type { Terminal } from '@xterm/xterm';
import type { ReplayGuard } from '../provider/client/replay-guard.js';

/**
 * Acknowledge parsed output at least this often during a flood (well under the stub's 256 KiB
 * minimum credit window, so the producer never waits on the page's ack pace).
 */
const ACK_BYTES = 64 * 1024;
/**
 * Written to xterm but not parsed yet: above HIGH the page asks the relay to pause the producer
 * (relays that credit on delivery do not wait for the page's acks), below LOW it resumes. xterm
 * itself discards data past 50 MB of backlog; this keeps the page far below that.
 */
const HIGH_WATERMARK = 2 * 1024 * 1024;
const LOW_WATERMARK = 256 * 1024;

export interface FlowSink {
  /** The page has rendered output up to `seq` (`ptyrelay/ack`). */
  ack(seq: number): void;
  pause(on: boolean): void;
}

/**
 * The page's side of output flow control: bytes go to xterm with a write callback; when xterm
 * has parsed them the seq is acknowledged, so a producer the page cannot keep up with is held by
 * the stub's credit window instead of piling up in the browser. xterm parses in time slices and
 * yields between them, so a flood in one terminal leaves the page and the others responsive.
 */
export class OutputFlow {
  private unparsed = 0;
  private parsedSeq = 0;
  private ackedSeq = 0;
  private paused = false;
  private epoch = 0;
  private disposed = false;

  constructor(
    private readonly term: Terminal,
    private readonly sink: FlowSink,
  ) {}

  /** Live output (or, with `guard`, replayed output whose terminal reports are dropped). */
  write(bytes: Uint8Array, endSeq: number, guard?: ReplayGuard): void {
    this.unparsed += bytes.length;
    const epoch = this.epoch;
    const done = () => {
      if (this.disposed || epoch !== this.epoch) return;
      this.unparsed -= bytes.length;
      this.parsedSeq = Math.max(this.parsedSeq, endSeq);
      this.maybeAck();
    };
    if (guard) void guard.replay(bytes).then(done);
    else this.term.write(bytes, done);
    if (!this.paused && this.unparsed > HIGH_WATERMARK) {
      this.paused = true;
      this.sink.pause(true);
    }
  }

  /** Output up to `seq` that is not drawn (background tail, data gap) counts as consumed. */
  skip(seq: number): void {
    this.parsedSeq = Math.max(this.parsedSeq, seq);
    this.maybeAck();
  }

  /** The stream restarts at `seq` (snapshot): writes still in xterm's queue no longer count. */
  restart(seq: number): void {
    this.epoch++;
    this.unparsed = 0;
    this.parsedSeq = this.ackedSeq = seq;
    this.maybeResume();
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
    if (this.paused) this.sink.pause(false);
  }
}
