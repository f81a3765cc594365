import { writeSync } from 'node:fs';
import type * as pty from 'node-pty';
import type { PtyInternals } from '../adapters/node-pty.js';

/**
 * Input to a PTY. node-pty writes through libuv's thread pool (`fs.write`): a keystroke waits
 * for a pool thread to wake and then for the main loop to hear back, two thread hand-offs that
 * cost milliseconds on a busy machine, where sshd writes the tty from its own loop. So input is
 * written here, on the daemon's thread, whenever node-pty has nothing queued and the kernel
 * takes it at once (the master is non-blocking: a full tty buffer answers EAGAIN instead of
 * blocking); whatever is left (a paste larger than the tty's buffer) goes to node-pty's queued
 * writer, behind anything before it, so order is kept. Without node-pty's internals (another
 * version, adapters/node-pty.ts) everything goes to node-pty's writer.
 */
export class PtyInputWriter {
  constructor(
    private readonly proc: pty.IPty,
    private readonly internals: PtyInternals | undefined,
  ) {}

  write(data: Buffer): void {
    let rest = data;
    if (this.internals && this.internals.writeQueue().length === 0) {
      try {
        rest = rest.subarray(writeSync(this.internals.fd, rest));
      } catch (err) {
        // EAGAIN: the tty's buffer is full; the queued writer retries. Anything else is
        // node-pty's to report, as it would without this path.
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') rest = data;
      }
    }
    if (rest.length > 0) this.proc.write(rest);
  }
}
