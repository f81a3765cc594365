import { Writable } from 'node:stream';

/** Log output held before the service is up, at most this much (the rest is counted, not kept). */
const MAX_HELD_BYTES = 1024 * 1024;

/**
 * A log destination that holds lines until `release()`, then writes through to `out`. `serve
 * --json` logs through it so that its one JSON line is the first thing on stdout.
 */
export class StartupLogBuffer extends Writable {
  private held: Buffer[] | undefined = [];
  private heldBytes = 0;
  private dropped = 0;

  constructor(private readonly out: NodeJS.WritableStream = process.stdout) {
    super();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    if (!this.held) {
      this.out.write(chunk);
    } else if (this.heldBytes + chunk.length <= MAX_HELD_BYTES) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
    } else this.dropped++;
    done();
  }

  /** Writes what was held (and a note of lines dropped past the cap), then passes lines through. */
  release(): void {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    for (const chunk of held) this.out.write(chunk);
    if (this.dropped > 0) {
      const note = { level: 40, time: Date.now(), msg: `${this.dropped} startup log lines dropped` };
      this.out.write(`${JSON.stringify(note)}\n`);
    }
  }
}
