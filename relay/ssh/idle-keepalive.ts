import type { Duplex } from 'node:stream';

/** ssh2's own keepalive restart (a private member of its Client: `client._resetKA`). */
interface KeepaliveRestart {
  _resetKA?: () => void;
}

/**
 * Keeps ssh2's keepalive for silent links only, as OpenSSH's ServerAliveInterval does: ssh2 sends
 * its `keepalive@openssh.com` request every interval even while the host is sending, and restarts
 * the interval only when a reply comes. Here the interval is restarted whenever bytes arrived since
 * the last look (every third of the interval), so a request goes out only after about an interval
 * of silence; dead links are still found (three unanswered requests, ssh2's count), and bytes from
 * the host are proof enough of a live one.
 *
 * Why it matters for typing: the reply is the one message of another type in a stream of channel
 * data. The relay's optimized receive path (ssh2's `decrypt` with its message dispatch inlined) is
 * specialized on the channel-data handler, and the first reply after that threw it away in the
 * middle of a burst of keys: a deoptimization and a 5 ms recompile, late echoes in the bench on a
 * 2-core host (docs/benchmarks.md, eleventh round).
 *
 * Returns a stop function; the watch also ends when the socket closes. Without ssh2's member
 * (another ssh2 version) nothing changes: ssh2 keeps its own timing.
 */
export function keepaliveOnlyWhenSilent(client: object, sock: Duplex, intervalMs: number): () => void {
  const restart = (client as KeepaliveRestart)._resetKA;
  if (typeof restart !== 'function' || !(intervalMs > 0)) return () => {};
  const received = receivedCounter(sock);
  let seen = received.bytes();
  const timer = setInterval(
    () => {
      const now = received.bytes();
      if (now === seen) return;
      seen = now;
      restart.call(client);
    },
    Math.max(1000, Math.floor(intervalMs / 3)),
  );
  timer.unref();
  const stop = () => {
    clearInterval(timer);
    received.stop();
    sock.off('close', stop);
  };
  sock.once('close', stop);
  return stop;
}

/** Bytes read from `sock` so far: a TCP socket counts them itself; any other stream is counted. */
function receivedCounter(sock: Duplex): { bytes: () => number; stop: () => void } {
  if (typeof (sock as { bytesRead?: unknown }).bytesRead === 'number') {
    const tcp = sock as Duplex & { bytesRead: number };
    return { bytes: () => tcp.bytesRead, stop: () => {} };
  }
  let n = 0;
  const count = (chunk: Buffer) => {
    n += chunk.length;
  };
  sock.on('data', count);
  return { bytes: () => n, stop: () => sock.off('data', count) };
}
