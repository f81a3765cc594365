import type { Client, ClientChannel } from 'ssh2';

/** Attempts to open one exec channel when the server refuses the request itself. */
const EXEC_ATTEMPTS = 3;
/** Pause before asking again: long enough for the server's cleanup of the refused session. */
const EXEC_RETRY_MS = 300;

/**
 * ssh2's error when the server answers an exec request with CHANNEL_FAILURE: nothing was
 * started, so asking again cannot run the command twice. Debian's dropbear 2022.83 does this now
 * and then (an assertion in common-channel.c aborts the session; fixed upstream later), as does
 * a server at its session limit for a moment.
 */
export function isExecRefused(err: unknown): boolean {
  return err instanceof Error && err.message === 'Unable to exec';
}

/**
 * Opens an exec channel for `command`, asking again (twice, 300 ms apart) when the server
 * refused the request without running anything; any other error, or a third refusal, rejects.
 * `setup` runs inside ssh2's callback, before anything else happens on the stream: a fast
 * command's output, exit status and close can be in the same packet batch as the channel's
 * confirmation, and listeners added a microtask later would miss them. `onRetry` hears about
 * each refusal that is retried (for the log).
 */
export async function openExec(
  conn: Client,
  command: string,
  setup: (stream: ClientChannel) => void,
  onRetry: (attempt: number, err: Error) => void = () => {},
): Promise<ClientChannel> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await new Promise<ClientChannel>((resolve, reject) =>
        conn.exec(command, (err, stream) => {
          if (err) {
            reject(err);
            return;
          }
          setup(stream);
          resolve(stream);
        }),
      );
    } catch (err) {
      if (!isExecRefused(err) || attempt >= EXEC_ATTEMPTS) throw err;
      onRetry(attempt, err as Error);
      await new Promise((r) => setTimeout(r, EXEC_RETRY_MS));
    }
  }
}
