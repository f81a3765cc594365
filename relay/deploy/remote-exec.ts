import type { Client } from 'ssh2';
import { PtyRelayError } from '../../provider/errors.js';
import { openExec } from './exec-channel.js';

/** Options for {@link remoteExec}. */
export interface RemoteExecOptions {
  /** The channel is closed and the promise rejects with `TIMEOUT` after this long. */
  timeoutMs: number;
  /** Written to the command's stdin, which is then closed (stdin is closed right away without it). */
  stdin?: string | Buffer;
  /** Stdout beyond this many bytes is dropped (the start is kept); default 4 MiB. */
  maxStdoutBytes?: number;
}

/** What a finished remote command left behind. */
export interface RemoteExecResult {
  stdout: string;
  /** The last {@link STDERR_KEEP_BYTES} bytes of stderr. */
  stderr: string;
  /** Exit status, or null when the command died from a signal or the server sent none. */
  code: number | null;
  signal: string | null;
}

/** Deploy scripts print a few KB; anything far larger is runaway rc-file noise. */
const DEFAULT_MAX_STDOUT_BYTES = 4 * 1024 * 1024;
/** Stderr is only used for error messages, where the end says what went wrong. */
export const STDERR_KEEP_BYTES = 16 * 1024;

/** Appends `chunk` to `parts`, then drops whole chunks from the front while over `limit` (keeps the tail). */
function keepTail(parts: Buffer[], chunk: Buffer, size: number, limit: number): number {
  parts.push(chunk);
  let total = size + chunk.length;
  while (parts.length > 1 && total - parts[0]!.length >= limit) total -= parts.shift()!.length;
  return total;
}

/**
 * Runs `command` over an SSH exec channel (the server hands it to the user's login shell) and
 * collects stdout, stderr and the exit status. Resolves on any exit status; rejects only when the
 * channel cannot be opened or the timeout hits.
 */
export function remoteExec(
  conn: Client,
  command: string,
  opts: RemoteExecOptions,
): Promise<RemoteExecResult> {
  const maxStdout = opts.maxStdoutBytes ?? DEFAULT_MAX_STDOUT_BYTES;
  return new Promise((resolve, reject) => {
    let settled = false;
    let closeChannel = (): void => {};
    const errParts: Buffer[] = [];
    const timer = setTimeout(() => {
      finish(() => {
        closeChannel();
        reject(
          new PtyRelayError('TIMEOUT', `remote command timed out after ${opts.timeoutMs} ms`, {
            command: command.slice(0, 200),
            stderr: Buffer.concat(errParts).toString('utf8'),
          }),
        );
      });
    }, opts.timeoutMs);
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    openExec(
      conn,
      command,
      // Inside ssh2's callback: a fast command's output and exit may follow in the same batch.
      (stream) => {
        if (settled) {
          stream.close(); // The timeout fired before the channel opened.
          return;
        }
        const out: Buffer[] = [];
        let outBytes = 0;
        let errBytes = 0;
        let code: number | null = null;
        let signal: string | null = null;
        closeChannel = () => stream.close();
        stream.on('data', (chunk: Buffer) => {
          if (outBytes >= maxStdout) return;
          out.push(chunk.subarray(0, maxStdout - outBytes));
          outBytes += Math.min(chunk.length, maxStdout - outBytes);
        });
        stream.stderr.on('data', (chunk: Buffer) => {
          errBytes = keepTail(errParts, chunk, errBytes, STDERR_KEEP_BYTES);
        });
        stream.on('exit', (c: number | null, sig?: string) => {
          code = typeof c === 'number' ? c : null;
          signal = sig ?? null;
        });
        stream.on('close', () => {
          finish(() => {
            const stderr = Buffer.concat(errParts);
            resolve({
              stdout: Buffer.concat(out).toString('utf8'),
              stderr: stderr.subarray(Math.max(0, stderr.length - STDERR_KEEP_BYTES)).toString('utf8'),
              code,
              signal,
            });
          });
        });
        stream.on('error', (e: Error) => finish(() => reject(e)));
        if (opts.stdin !== undefined) stream.end(opts.stdin);
        else stream.end();
      },
    ).catch((err: Error) => finish(() => reject(err)));
  });
}
