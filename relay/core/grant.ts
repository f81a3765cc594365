import { PtyRelayError } from '../../provider/errors.js';

/**
 * What a bearer token lets its holder do (docs/security.md, "Tokens"). Pure: every check the
 * service makes on a connection, an MCP request or an input frame goes through these functions.
 */

export const TOKEN_SCOPES = ['read', 'write', 'admin'] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];

/** The built-in host: a shell on the machine that holds the SSH keys. */
export const LOCAL_HOST = 'local';

export interface Grant {
  /** The token's id (`startup` for the relay's own token). */
  tokenId: string;
  /** Its name, for logs and `token ls` (never the token). */
  name: string;
  scope: TokenScope;
  /** The hosts it reaches; unset: every host (for `write`, every host but `local`). */
  hosts?: readonly string[];
  /** The one terminal it reaches, `HOST/ID`. */
  terminal?: string;
  /** Epoch ms after which it no longer authenticates. */
  expiresAt?: number;
}

/** The relay's startup token (PTYRELAY_TOKEN or ~/.config/ptyrelay/token): admin, always. */
export const STARTUP_GRANT: Grant = Object.freeze({ tokenId: 'startup', name: 'startup', scope: 'admin' });

/** A terminal id in its global form: `pty-3` is `local/pty-3`. */
export function globalTerminalId(id: string): string {
  return id.includes('/') ? id : `${LOCAL_HOST}/${id}`;
}

export function hostOfTerminal(id: string): string {
  const g = globalTerminalId(id);
  return g.slice(0, g.lastIndexOf('/'));
}

const isAdmin = (g: Grant) => g.scope === 'admin';
const writes = (g: Grant) => g.scope !== 'read';

/** Whether the token sees `host` at all (its terminals, its link state). */
export function canSeeHost(g: Grant, host: string): boolean {
  if (isAdmin(g)) return true;
  if (g.terminal !== undefined) return hostOfTerminal(g.terminal) === host;
  return g.hosts === undefined || g.hosts.includes(host);
}

/** Whether the token may type into, resize, signal or close terminals of `host`. */
function canDriveHost(g: Grant, host: string): boolean {
  if (isAdmin(g)) return true;
  if (!writes(g)) return false;
  if (g.terminal !== undefined) return hostOfTerminal(g.terminal) === host;
  // `local` is a shell beside the SSH keys: only a token that names it reaches it.
  if (g.hosts === undefined) return host !== LOCAL_HOST;
  return g.hosts.includes(host);
}

/** Whether the token may list, subscribe to, attach to and read terminal `id`. */
export function canRead(g: Grant, id: string): boolean {
  const gid = globalTerminalId(id);
  if (g.terminal !== undefined && !isAdmin(g)) return g.terminal === gid;
  return canSeeHost(g, hostOfTerminal(gid));
}

/** Whether the token may drive terminal `id` (input, resize, signal, dispose, claim). */
export function canWrite(g: Grant, id: string): boolean {
  return canRead(g, id) && canDriveHost(g, hostOfTerminal(id));
}

/** Whether the token may create terminals on `host`. */
export function canCreate(g: Grant, host: string): boolean {
  return (isAdmin(g) || g.terminal === undefined) && canDriveHost(g, host);
}

function notPermitted(g: Grant, what: string, details: Record<string, unknown>): PtyRelayError {
  return new PtyRelayError('NOT_PERMITTED', `the token "${g.name}" (scope ${g.scope}) may not ${what}`, {
    scope: g.scope,
    tokenName: g.name,
    ...details,
  });
}

/** NOT_PERMITTED unless the token may read terminal `id`. */
export function needRead(g: Grant, id: string): void {
  if (!canRead(g, id)) throw notPermitted(g, `see ${globalTerminalId(id)}`, { id: globalTerminalId(id) });
}

/** NOT_PERMITTED unless the token may drive terminal `id`. */
export function needWrite(g: Grant, id: string, what = 'drive'): void {
  if (!canWrite(g, id))
    throw notPermitted(g, `${what} ${globalTerminalId(id)}`, { id: globalTerminalId(id) });
}

/** NOT_PERMITTED unless the token may create terminals on `host`. */
export function needCreate(g: Grant, host: string): void {
  if (!canCreate(g, host)) throw notPermitted(g, `create terminals on ${host}`, { host });
}

/** NOT_PERMITTED unless the token sees `host`. */
export function needHost(g: Grant, host: string): void {
  if (!canSeeHost(g, host)) throw notPermitted(g, `reach host ${host}`, { host });
}

/** NOT_PERMITTED unless the token is `admin` (token management, host key trust). */
export function needAdmin(g: Grant, what: string): void {
  if (!isAdmin(g)) throw notPermitted(g, what, {});
}

/** One line for logs and `token ls`: scope, hosts, terminal. */
export function describeGrant(g: Grant): string {
  const where =
    g.terminal ?? (g.hosts ? g.hosts.join(',') : g.scope === 'read' ? 'all hosts' : 'all hosts but local');
  return `${g.scope} on ${isAdmin(g) ? 'everything' : where}`;
}
