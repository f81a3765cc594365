import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { PtyRelayError } from '../../provider/errors.js';
import { tokenFileWarning } from '../core/file-modes.js';

/** Random bytes in a created token (hex-encoded: 64 characters). */
export const TOKEN_BYTES = 32;
/** Shortest token accepted from the environment or a file. */
export const MIN_TOKEN_LENGTH = 16;
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

export interface LoadedToken {
  token: string;
  /** The token file, when the token came from (or was written to) one. */
  path?: string;
  source: 'env' | 'file' | 'created';
  /** Set when the token file can be read by others (left as it is: the user decides). */
  warning?: string;
}

/** `$PTYRELAY_TOKEN_FILE`, else `~/.config/ptyrelay/token`. */
export function defaultTokenPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.PTYRELAY_TOKEN_FILE || join(env.HOME || homedir(), '.config', 'ptyrelay', 'token');
}

function checked(token: string, where: string): string {
  if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
    throw new PtyRelayError(
      'CONFIG_INVALID',
      `the token in ${where} must be at least ${MIN_TOKEN_LENGTH} characters without whitespace`,
    );
  }
  return token;
}

function readToken(path: string): LoadedToken {
  const token = checked(readFileSync(path, 'utf8').trim(), path);
  const warning = tokenFileWarning(path);
  return { token, path, source: 'file', ...(warning ? { warning } : {}) };
}

/**
 * The relay's bearer token: `PTYRELAY_TOKEN` if set, else the token file (`PTYRELAY_TOKEN_FILE`, default
 * `~/.config/ptyrelay/token`), created on first run with 32 random bytes in hex (file 0600 in
 * a 0700 directory). A file others can read is used with a `warning` (never chmodded behind the
 * user's back).
 */
export function loadOrCreateToken(opts: { env?: NodeJS.ProcessEnv; path?: string } = {}): LoadedToken {
  const env = opts.env ?? process.env;
  const fromEnv = env.PTYRELAY_TOKEN?.trim();
  if (fromEnv) return { token: checked(fromEnv, 'PTYRELAY_TOKEN'), source: 'env' };
  const path = opts.path ?? defaultTokenPath(env);
  try {
    return readToken(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const dir = dirname(path);
  // Only a directory created here is tightened; an existing one (e.g. a custom path) is left alone.
  if (mkdirSync(dir, { recursive: true, mode: DIR_MODE }) !== undefined) chmodSync(dir, DIR_MODE);
  const token = randomBytes(TOKEN_BYTES).toString('hex');
  // Written aside, then linked into place: relays of a fleet that start at once on one shared file
  // never read it half written, and if another one created it meanwhile, theirs is used.
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(tmp, `${token}\n`, { mode: FILE_MODE, flag: 'wx' });
  try {
    linkSync(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readToken(path);
    throw err;
  } finally {
    rmSync(tmp, { force: true });
  }
  chmodSync(path, FILE_MODE);
  return { token, path, source: 'created' };
}
