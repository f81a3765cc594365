import { fileURLToPath, pathToFileURL } from 'node:url';
import { PtyRelayError } from '../../provider/errors.js';
import { ROOT_URI, TERMINAL_SCHEME, type URI } from './types.js';

/** Host names usable in terminal URIs (also enforced by the config validator). */
export const HOST_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Longest client-chosen channel URI accepted (the daemon stores it with the session). */
export const MAX_CLIENT_URI_LENGTH = 1024;
/** A URI as AHP clients choose them: a scheme, a colon, no whitespace or control characters. */
const CLIENT_URI_PATTERN = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s\x00-\x1f\x7f]+$/;

/** The channel URI of a terminal: the client's alias if it chose one, else the minted URI. */
export function channelUri(id: string, alias?: string): URI {
  return alias ?? terminalUri(id);
}

/**
 * Checks a client-chosen terminal URI (any scheme except the minted `ptyrelay-terminal:` ids and
 * the root channel); throws INVALID_ARGUMENT.
 */
export function checkClientUri(uri: string): void {
  if (uri.length > MAX_CLIENT_URI_LENGTH || !CLIENT_URI_PATTERN.test(uri)) {
    throw new PtyRelayError(
      'INVALID_ARGUMENT',
      `channel must be a URI (scheme:rest, at most ${MAX_CLIENT_URI_LENGTH} characters, no spaces)`,
    );
  }
  if (uri.startsWith(TERMINAL_SCHEME) || uri === ROOT_URI) {
    throw new PtyRelayError(
      'INVALID_ARGUMENT',
      `${TERMINAL_SCHEME}/<host>/<id> ids are minted by the host: pass ${TERMINAL_SCHEME}/<host>/, omit channel, or choose a URI of another scheme`,
    );
  }
}

/** `ptyrelay-terminal:/<host>/<id>` for the provider id `<host>/<id>`. */
export function terminalUri(id: string): URI {
  return `${TERMINAL_SCHEME}/${id}`;
}

/** What a terminal URI names: a host, and an id unless the server is to mint it. */
export interface ParsedTerminalUri {
  host: string;
  /** Provider id `<host>/<localId>`; undefined for `ptyrelay-terminal:/<host>/`. */
  id?: string;
}

/** Parses `ptyrelay-terminal:/<host>/<id>` (or `…/<host>/`); undefined when it is not one. */
export function parseTerminalUri(uri: string): ParsedTerminalUri | undefined {
  if (typeof uri !== 'string' || !uri.startsWith(`${TERMINAL_SCHEME}/`)) return undefined;
  const path = uri.slice(TERMINAL_SCHEME.length + 1);
  const slash = path.indexOf('/');
  const host = slash < 0 ? path : path.slice(0, slash);
  const local = slash < 0 ? '' : path.slice(slash + 1);
  if (!HOST_NAME_PATTERN.test(host) || local.includes('/')) return undefined;
  return local ? { host, id: `${host}/${local}` } : { host };
}

/** The provider id a terminal URI names, or NOT_FOUND. */
export function terminalIdOf(uri: unknown): string {
  const p = typeof uri === 'string' ? parseTerminalUri(uri) : undefined;
  if (!p?.id) throw new PtyRelayError('NOT_FOUND', `${String(uri)} is not a terminal channel`);
  return p.id;
}

/** A path on the host as a `file://` URI (AHP carries cwd as a URI). */
export function pathToUri(path: string): URI {
  return path.startsWith('/') ? pathToFileURL(path).href : path;
}

/** A `file://` URI or a plain path as a path on the host. */
export function uriToPath(cwd: string): string {
  if (!cwd.startsWith('file:')) return cwd;
  try {
    return fileURLToPath(cwd);
  } catch {
    // A URI naming another machine (file://host/…): the path part is what the host needs.
    return decodeURIComponent(new URL(cwd).pathname);
  }
}
