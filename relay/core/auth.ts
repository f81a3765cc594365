import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Prefix of the `Sec-WebSocket-Protocol` entry that carries the token (browsers cannot set headers). */
export const TOKEN_SUBPROTOCOL_PREFIX = 'ptyrelay.token.';

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/**
 * Constant-time token comparison: both sides are hashed first so the buffers given to
 * `timingSafeEqual` always have equal length and the token's length does not leak either.
 */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  return timingSafeEqual(digest(presented), digest(expected));
}

/** Subprotocols the client offered, in order. */
export function offeredSubprotocols(req: IncomingMessage): string[] {
  const h = req.headers['sec-websocket-protocol'];
  if (!h) return [];
  return h
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The token from `Authorization: Bearer <t>` or a `ptyrelay.token.<t>` subprotocol entry. */
export function presentedToken(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  if (auth) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) return m[1];
  }
  const sub = offeredSubprotocols(req).find((p) => p.startsWith(TOKEN_SUBPROTOCOL_PREFIX));
  return sub?.slice(TOKEN_SUBPROTOCOL_PREFIX.length);
}

/** True when the request carries the right token. */
export function isAuthorized(req: IncomingMessage, token: string): boolean {
  return tokenMatches(presentedToken(req), token);
}

/** Requests without Origin (non-browser clients) pass; browser Origins must be listed. */
export function originAllowed(req: IncomingMessage, allowed: readonly string[]): boolean {
  const origin = req.headers.origin;
  return origin === undefined || allowed.includes(origin);
}

/** The subprotocol to echo: the first offered one that is not the token, or none. */
export function selectSubprotocol(offered: Iterable<string>): string | false {
  for (const p of offered) if (!p.startsWith(TOKEN_SUBPROTOCOL_PREFIX)) return p;
  return false;
}
