import type { Client, ClientChannel } from 'ssh2';
import { type ErrorCode, PtyRelayError } from '../../provider/errors.js';
import { openExec } from './exec-channel.js';
import { type RemoteExecResult, remoteExec } from './remote-exec.js';
import { shellQuote } from './shell-quote.js';
import { StartMarkerScanner } from './start-marker.js';

/**
 * The only command line ptyrelay hands to the host: the server runs it with the user's login shell
 * (`$SHELL -c`), and these two words mean the same in bash, dash, zsh, fish and tcsh. The script
 * itself comes on stdin, so no login shell ever parses it.
 */
export const SH_COMMAND = '/bin/sh -s';
/** Login-shell noise accepted before a start marker; far more is a shell that never runs the script. */
const MAX_NOISE_BYTES = 1024 * 1024;
/** Error messages carry the end of stderr, where the reason usually is. */
const STDERR_TAIL_BYTES = 2048;
/** Here-document delimiter of {@link nodeProgram}; the program must not contain it as a line. */
const HEREDOC_END = 'PTYRELAY_NODE_END';

/** Runs `script` with `/bin/sh` (script on stdin, closed after it) and collects its output. */
export function runSh(
  conn: Client,
  script: string,
  opts: { timeoutMs: number; maxStdoutBytes?: number },
): Promise<RemoteExecResult> {
  return remoteExec(conn, SH_COMMAND, { ...opts, stdin: script });
}

/**
 * An sh script that runs `js` on `nodePath` from a here-document (`node -`), so the program and
 * its stdin never share the channel: `/bin/sh` (dash) reads its script in blocks.
 */
export function nodeProgram(nodePath: string, js: string): string {
  if (js.split('\n').includes(HEREDOC_END)) throw new Error('node program contains its heredoc delimiter');
  return `exec ${shellQuote(nodePath)} - <<'${HEREDOC_END}'\n${js}\n${HEREDOC_END}\n`;
}

/**
 * An sh script that runs `js` with `node -e`, leaving the channel's stdin to the program (its data
 * follows the start marker the program prints; see {@link openMarkedChannel}).
 */
export function nodeEvalScript(nodePath: string, js: string): string {
  if (js.split('\n').includes(HEREDOC_END)) throw new Error('node program contains its heredoc delimiter');
  return `R=$(cat <<'${HEREDOC_END}'\n${js}\n${HEREDOC_END}\n)\nexec ${shellQuote(nodePath)} -e "$R"\n`;
}

/**
 * An sh script that execs `argv` with the channel's stdin, stdout and stderr: the last thing the
 * shell reads, so whatever the relay writes after {@link openMarkedChannel} resolves reaches the
 * program, not the shell.
 */
export function execScript(argv: string[]): string {
  return `exec ${argv.map(shellQuote).join(' ')}\n`;
}

/** A channel past its start marker, and the stderr it has collected. */
export interface MarkedChannel {
  stream: ClientChannel;
  /** The end of stderr so far. */
  stderr(): string;
  /** Noise bytes dropped before the marker. */
  noiseBytes: number;
}

/**
 * Runs `script` with `/bin/sh` and resolves once its stdout printed `<marker>\n`, with the stream
 * paused at the first byte after it (the data that follows belongs to the program the script
 * exec'd). Nothing is written to stdin after the script until then, so the shell cannot read ahead
 * into the payload. Rejects with TIMEOUT, or `failCode` when the command ends without the marker.
 */
export function openMarkedChannel(
  conn: Client,
  script: string,
  marker: string,
  opts: {
    timeoutMs: number;
    what: string;
    /** Code of the error when the channel ends before the marker (default DEPLOY_FAILED). */
    failCode?: ErrorCode;
  },
): Promise<MarkedChannel> {
  const failCode = opts.failCode ?? 'DEPLOY_FAILED';
  return new Promise((resolve, reject) => {
    let stderr = '';
    let done = false;
    let channel: ClientChannel | undefined;
    const fail = (e: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      channel?.close();
      reject(e);
    };
    const timer = setTimeout(
      () => fail(new PtyRelayError('TIMEOUT', `${opts.what} did not start within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    );
    openExec(conn, SH_COMMAND, (stream) => {
      channel = stream;
      if (done) {
        stream.close();
        return;
      }
      const scanner = new StartMarkerScanner(marker, MAX_NOISE_BYTES);
      stream.stderr.on('data', (c: Buffer) => {
        stderr = (stderr + c.toString('utf8')).slice(-STDERR_TAIL_BYTES);
      });
      const onData = (chunk: Buffer): void => {
        let rest: Buffer | undefined;
        try {
          rest = scanner.feed(chunk);
        } catch (e) {
          fail(new PtyRelayError(failCode, `${opts.what}: ${(e as Error).message}`, { stderr }));
          return;
        }
        if (!rest || done) return;
        done = true;
        clearTimeout(timer);
        stream.off('data', onData);
        stream.off('close', onClose);
        stream.off('error', fail);
        stream.pause();
        if (rest.length > 0) stream.unshift(rest);
        resolve({ stream, stderr: () => stderr, noiseBytes: scanner.noiseBytes });
      };
      const onClose = (): void =>
        fail(
          new PtyRelayError(failCode, `${opts.what} ended before it started: ${stderr.trim()}`, {
            stderr,
            stdout: scanner.tail,
          }),
        );
      stream.on('data', onData);
      stream.on('close', onClose);
      stream.on('error', fail);
      stream.write(script);
    }).catch(fail);
  });
}
