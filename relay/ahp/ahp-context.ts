import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../core/log.js';
import type { HostRouter, RpcConnection } from '../core/rpc-types.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import type { AhpHub } from './ahp-hub.js';
import type { AhpPeer } from './ahp-peers.js';
import type { TerminalLocator } from './terminal-locator.js';

/** What the AHP methods share (ahp-subscriptions.ts, ahp-terminal-methods.ts): one per extension. */
export interface AhpContext {
  readonly hub: AhpHub;
  readonly router: HostRouter;
  readonly registry: TerminalRegistry;
  readonly locator: TerminalLocator;
  readonly log?: Logger;
}

/** An initialized connection's peer: it has said which client it is. */
export type InitializedPeer = AhpPeer & { clientId: string };

/** The peer of an initialized connection, or INVALID_ARGUMENT. */
export function initializedPeer(hub: AhpHub, conn: RpcConnection): InitializedPeer {
  const p = hub.peers.get(conn);
  if (!p?.clientId) throw new PtyRelayError('INVALID_ARGUMENT', 'send initialize (or reconnect) first');
  return p as InitializedPeer; // Not wire data: the relay's own peer, clientId checked above.
}

/** An error as a client reads it in a rejected action or the log: its code when it has one. */
export function reasonOf(err: unknown): string {
  if (isPtyRelayError(err)) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}
