import { writeSync } from 'node:fs';
import type * as pty from 'node-pty';

/** node-pty's UnixTerminal internals this relies on (checked at run time; absent → async only). */
interface UnixTerminalInternals {
  fd?: number;
  _writeStream?: { _writeQueue?: unknown[] };
}

/**
 * Input to a PTY. node-pty writes through libuv's thread pool (`fs.write`): a keystroke waits
 * for a pool thread to wake and then for the main loop to hear back, two thread hand-offs that
 * cost milliseconds on a busy machine, where sshd writes the tty from its own loop. So input is
 * written here, on the daemon's thread, whenever node-pty has nothing queued and the kernel
 * takes it at once (the master is non-blocking: a full tty buffer answers EAGAIN instead of
 * blocking); whatever is left (a paste larger than the tty's buffer) goes to node-pty's queued
 * writer, behind anything before it, so order is kept.
 */
export class PtyInputWriter {
  private readonly internals: UnixTerminalInternals;

  constructor(private readonly proc: pty.IPty) {
    // Not wire data: node-pty's UnixTerminal fields its typings do not export.
    this.internals = proc as unknown as UnixTerminalInternals;
  }

  write(data: Buffer): void {
    const queue = this.internals._writeStream?._writeQueue;
    const fd = this.internals.fd;
    let rest = data;
    if (Array.isArray(queue) && queue.length === 0 && typeof fd === 'number') {
      try {
        rest = rest.subarray(writeSync(fd, rest));
      } catch (err) {
        // EAGAIN: the tty's buffer is full; the queued writer retries. Anything else is
        // node-pty's to report, as it would without this path.
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') rest = data;
      }
    }
    if (rest.length > 0) this.proc.write(rest);
  }
}
