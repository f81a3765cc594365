import type { Client } from 'ssh2';
import { type ChunkSink, type StreamStats, tally } from './pty-run.js';
import { now } from './util.js';

/**
 * Runs `command` on an ssh2 connection (with a remote PTY when `pty`) and feeds its stdout to
 * `sink` until the channel closes: the flood's ssh2 references, read in this process as
 * SshPtyProvider reads its link.
 */
export function runSsh2ExecStream(
  client: Client,
  command: string,
  pty: boolean,
  sink: ChunkSink,
  timeoutMs: number,
): Promise<StreamStats> {
  return new Promise((resolve, reject) => {
    const s: StreamStats = { bytes: 0, t0: now(), tFirst: 0, tLast: 0, gaps: 0 };
    const opts = pty ? { pty: { cols: 80, rows: 24, term: 'xterm-256color' } } : {};
    client.exec(command, opts, (err, ch) => {
      if (err) {
        reject(err);
        return;
      }
      const timer = setTimeout(() => {
        ch.close();
        reject(new Error(`${command} did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      ch.on('data', (c: Buffer) => {
        tally(s, c);
        sink(c);
      });
      ch.stderr.resume();
      ch.on('exit', (code: number | null) => {
        s.exitCode = code ?? -1;
      });
      ch.on('close', () => {
        clearTimeout(timer);
        resolve(s);
      });
    });
  });
}
