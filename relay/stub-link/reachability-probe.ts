import type { LookupFunction } from 'node:net';
import { connect } from 'node:net';

/**
 * A probe every second while a link is down: the host's return is noticed within about a second
 * whatever the ladder's next step is (the ladder backs off to 30 s), for the cost of one TCP
 * connect and a 20-byte banner read.
 */
export const PROBE_INTERVAL_MS = 1000;
/** A probe that has not seen the banner by then counts as "not back" (it must end before the next one). */
export const PROBE_TIMEOUT_MS = 900;
/** What every SSH server sends first (RFC 4253 §4.2). */
const SSH_BANNER_PREFIX = 'SSH-';

/** Says whether the host answers now; aborted by the signal. */
export type ReachabilityProbe = (signal: AbortSignal) => Promise<boolean>;

/**
 * True when `host:port` accepts a TCP connection and sends an SSH banner within the timeout: a
 * middlebox that accepts and resets, or a network that swallows packets, does not count.
 */
export function sshBannerProbe(host: string, port: number, lookup?: LookupFunction): ReachabilityProbe {
  return (signal) =>
    new Promise((resolve) => {
      const sock = connect({ host, port, ...(lookup ? { lookup } : {}) });
      let got = '';
      const done = (ok: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        sock.destroy();
        resolve(ok);
      };
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), PROBE_TIMEOUT_MS);
      signal.addEventListener('abort', onAbort, { once: true });
      sock.on('data', (c: Buffer) => {
        got += c.toString('latin1');
        if (got.length >= SSH_BANNER_PREFIX.length) done(got.startsWith(SSH_BANNER_PREFIX));
      });
      sock.on('error', () => done(false));
      sock.on('close', () => done(false));
    });
}
