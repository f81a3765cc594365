import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * A scoped token is `ptr_<id>_<secret>`: the id (12 hex digits) finds its record, the secret
 * (256 random bits, base64url) is what makes it unguessable. Only the SHA-256 of the whole token
 * is stored: a slow hash buys nothing for 256 random bits, and a check stays cheap on every
 * `/mcp` request. The characters are valid in a `Sec-WebSocket-Protocol` entry.
 */
const PREFIX = 'ptr';
const ID_BYTES = 6;
const SECRET_BYTES = 32;
const TOKEN_RE = /^ptr_([0-9a-f]{12})_[A-Za-z0-9_-]{43}$/;

export interface MintedToken {
  id: string;
  /** Shown once, never stored. */
  token: string;
  sha256: string;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function mintToken(): MintedToken {
  const id = randomBytes(ID_BYTES).toString('hex');
  const token = `${PREFIX}_${id}_${randomBytes(SECRET_BYTES).toString('base64url')}`;
  return { id, token, sha256: hashToken(token) };
}

/** The id of a well-formed scoped token, else undefined (it may still be the startup token). */
export function scopedTokenId(token: string): string | undefined {
  return TOKEN_RE.exec(token)?.[1];
}

/** Constant-time check of `token` against a stored SHA-256 (hex). */
export function tokenHashMatches(token: string, sha256: string): boolean {
  const want = Buffer.from(sha256, 'hex');
  const got = createHash('sha256').update(token, 'utf8').digest();
  return want.length === got.length && timingSafeEqual(want, got);
}
