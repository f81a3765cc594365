import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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

/** `~/.config/ptyrelay/token`. */
export function defaultTokenPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.HOME || homedir(), '.config', 'ptyrelay', 'token');
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
 * The relay's bearer token: `PTYRELAY_TOKEN` if set, else the token file (default
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
  try {
    // `wx`: if another process created it meanwhile, use theirs.
    writeFileSync(path, `${token}\n`, { mode: FILE_MODE, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readToken(path);
    throw err;
  }
  chmodSync(path, FILE_MODE);
  return { token, path, source: 'created' };
}
