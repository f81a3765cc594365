/**
 * What the pieces of the `ptyrelay/*` extension share (pty-extension.ts assembles them): the
 * router and registry, the output fan-out and background votes, the per-connection state of
 * pty-connections.ts, and the provider lookups that check a terminal's claim. Also the parsing of
 * terminal ids as the API takes them (`pty-3` is `local/pty-3`) and the host part of an id.
 */
import type { IPtyProvider } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../core/log.js';
import type { HostRouter, RpcConnection } from '../core/rpc-types.js';
import type { RouterBackground } from '../flow/background-by-viewers.js';
import type { RelayFanout } from '../flow/relay-fanout.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import type { ConnState } from './pty-connections.js';

/** The extension's shared state and lookups, handed to its method tables. */
export interface PtyMethodContext {
  router: HostRouter;
  registry: TerminalRegistry;
  log?: Logger;
  fanout: RelayFanout;
  background: RouterBackground;
  warn: (fields: Record<string, unknown>, msg: string) => void;
  /** This connection's state, created on first use. */
  state: (conn: RpcConnection) => ConnState;
  /** The provider of a host, subscribed to its events. */
  providerOf: (host: string) => IPtyProvider;
  /** The provider of a terminal (its registered host, else the host part of its id). */
  providerForId: (id: string) => IPtyProvider;
  /** Throws NOT_FOUND or NOT_OWNER unless this connection's client holds the terminal's claim. */
  owned: (cs: ConnState, id: string) => IPtyProvider;
}

function str(v: unknown, name: string): string {
  if (typeof v !== 'string' || v.length === 0)
    throw new PtyRelayError('INVALID_ARGUMENT', `${name} required`);
  return v;
}

/** A terminal id param in its global form (`pty-3` is `local/pty-3`, as the local provider reads it). */
export function termId(v: unknown): string {
  const id = str(v, 'id');
  return id.includes('/') ? id : `local/${id}`;
}

export function hostOf(id: string): string {
  const slash = id.lastIndexOf('/');
  return slash < 0 ? 'local' : id.slice(0, slash);
}
