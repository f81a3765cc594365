import type { IncomingMessage } from 'node:http';
import { isLoopbackAddress } from '../core/listen-policy.js';

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * True when a WebSocket upgrade comes from the relay's own web page: its Origin is the address
 * the relay listens on (any loopback spelling when it listens on loopback; the Host the browser
 * asked for when it listens on every interface). Other origins still need `allowedOrigins`.
 */
export function fromOwnPage(
  req: IncomingMessage,
  listenHost: string,
  port: number,
  scheme: 'http' | 'https' = 'http',
): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  if (listenHost === '0.0.0.0' || listenHost === '::')
    return origin === `${scheme}://${req.headers.host ?? ''}`;
  const names = isLoopbackAddress(listenHost)
    ? LOOPBACK_NAMES
    : [listenHost.includes(':') ? `[${listenHost}]` : listenHost];
  return names.some((n) => origin === `${scheme}://${n}:${port}`);
}
