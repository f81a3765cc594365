import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { PtyRelayError } from '../../provider/errors.js';
import { assertSecretFileMode } from './file-modes.js';

/** TLS material for `serve --tls-cert/--tls-key` (PEM). */
export interface TlsFiles {
  cert: string;
  key: string;
}

/** 127.0.0.0/8, ::1 (also as `[::1]` or IPv4-mapped) and `localhost`: only this machine can connect. */
export function isLoopbackAddress(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (h === 'localhost') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice('::ffff:'.length) : h;
  if (isIPv4(v4)) return v4.startsWith('127.');
  return isIPv6(h) && /^(0{0,4}:){2,7}0{0,3}1$|^::1$/.test(h);
}

/**
 * Refuses to serve plain `ws://` beyond loopback: the bearer token and every keystroke would
 * cross the network in clear. `insecure` (`--insecure-listen`) is the explicit way around it
 * (e.g. behind a TLS-terminating proxy on the same host).
 */
export function assertListenAllowed(host: string, tls: boolean, insecure: boolean): void {
  if (tls || insecure || isLoopbackAddress(host)) return;
  throw new PtyRelayError(
    'INSECURE_LISTEN',
    `refusing to listen on ${host} without TLS: tokens and keystrokes would travel in clear. Give --tls-cert FILE --tls-key FILE (or "tls" in the config), listen on 127.0.0.1, or pass --insecure-listen if something else encrypts the link`,
    { host },
  );
}

/** Reads the certificate and key; the key must not be readable by others. */
export function loadTlsFiles(files: TlsFiles): { cert: Buffer; key: Buffer } {
  const read = (path: string, what: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new PtyRelayError(
        'CONFIG_INVALID',
        `cannot read the TLS ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  };
  const cert = read(files.cert, 'certificate');
  const key = read(files.key, 'key');
  assertSecretFileMode(files.key, { secrets: true, commands: false }, 'a TLS private key');
  return { cert, key };
}
