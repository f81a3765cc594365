import type { IncomingMessage } from 'node:http';

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/**
 * True when a WebSocket upgrade comes from the relay's own web page: its Origin is the address
 * the relay listens on (any loopback spelling when it listens on loopback; the Host the browser
 * asked for when it listens on every interface). Other origins still need `allowedOrigins`.
 */
export function fromOwnPage(req: IncomingMessage, listenHost: string, port: number): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  if (listenHost === '0.0.0.0' || listenHost === '::') return origin === `http://${req.headers.host ?? ''}`;
  const names = isLoopback(listenHost)
    ? LOOPBACK_NAMES
    : [listenHost.includes(':') ? `[${listenHost}]` : listenHost];
  return names.some((n) => origin === `http://${n}:${port}`);
}
