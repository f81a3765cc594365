/**
 * The client side of the `ptyrelay/*` extension: one ConnState per connection (created on first
 * use, torn down on close), the client identity `ptyrelay/hello` binds to it, and the input ledger
 * it speaks for. Input de-duplication is per client instance, not per connection: an instance's
 * InputLedger outlives its connection for LEDGER_TTL_MS so a reconnect resends without typing
 * twice, and the newest connection of the instance owns it (acks go there). The Input frames
 * themselves are handled in relay/input/input-frames.ts.
 */

import { RelayNotification } from '../../provider/client/relay-protocol.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { HostRouter, RpcConnection } from '../core/rpc-types.js';
import type { RouterBackground } from '../flow/background-by-viewers.js';
import type { RelayFanout } from '../flow/relay-fanout.js';
import { InputLedger, inputOriginOf } from '../input/input-ledger.js';

/** Input de-duplication state of a client instance outlives its last connection by this long. */
const LEDGER_TTL_MS = 10 * 60_000;

/** A client instance's input ledger and the connection currently speaking for it. */
interface LedgerSlot {
  key: string;
  /** The instance as daemons know it in input origins (the same on every relay process). */
  origin: string;
  ledger: InputLedger;
  owner?: ConnState;
  expiry?: NodeJS.Timeout;
}

export interface ConnState {
  conn: RpcConnection;
  clientId?: string;
  slot?: LedgerSlot;
  closed: boolean;
  /** Attaches in flight per terminal id, settled once the attach recorded (or failed). */
  attaching: Map<string, Promise<void>>;
}

export interface ClientConnections {
  /** Open connections (those that have state). */
  conns: Set<ConnState>;
  /** This connection's state, created on first use. */
  state: (conn: RpcConnection) => ConnState;
  /** The claim holder of this connection's client; throws until `ptyrelay/hello`. */
  holder: (cs: ConnState) => string;
  /** Binds the client (instance) to the connection; `known` when its input ledger was kept. */
  hello: (conn: RpcConnection, clientId: string, instanceId?: string) => 'known' | 'fresh';
}

export function clientConnections(deps: {
  router: HostRouter;
  fanout: RelayFanout;
  background: RouterBackground;
  warn: (fields: Record<string, unknown>, msg: string) => void;
}): ClientConnections {
  const { router, fanout, background, warn } = deps;
  const conns = new Set<ConnState>();
  const ledgers = new Map<string, LedgerSlot>();

  const state = (conn: RpcConnection): ConnState => {
    let cs = conn.state.get('ptyrelay') as ConnState | undefined;
    if (!cs) {
      const created: ConnState = { conn, closed: false, attaching: new Map() };
      cs = created;
      conn.state.set('ptyrelay', cs);
      conns.add(cs);
      conn.onClose(() => closeConn(created));
    }
    return cs;
  };

  function closeConn(cs: ConnState): void {
    cs.closed = true;
    conns.delete(cs);
    fanout.dropSink(cs.conn);
    background.leave(cs.conn, undefined, warn);
    const slot = cs.slot;
    if (slot && slot.owner === cs) {
      // Input this client typed during a host outage is not sent once it has gone away.
      for (const p of router.providers()) p.dropQueuedInput?.(slot.key, undefined, 'gone');
      slot.owner = undefined;
      slot.ledger.sink = undefined;
      slot.expiry = setTimeout(() => ledgers.delete(slot.key), LEDGER_TTL_MS);
      slot.expiry.unref();
    }
  }

  const holder = (cs: ConnState): string => {
    if (!cs.clientId) throw new PtyRelayError('INVALID_ARGUMENT', 'call ptyrelay/hello first');
    return `client:${cs.clientId}`;
  };

  const hello = (conn: RpcConnection, clientId: string, instanceId?: string): 'known' | 'fresh' => {
    const cs = state(conn);
    if (cs.clientId && cs.clientId !== clientId)
      throw new PtyRelayError('INVALID_ARGUMENT', 'clientId cannot change on a connection');
    cs.clientId = clientId;
    conn.clientId ??= clientId;
    const key = `${clientId}\n${instanceId ?? clientId}`;
    let slot = ledgers.get(key);
    const input = slot ? 'known' : 'fresh';
    if (!slot) {
      slot = { key, origin: inputOriginOf(key), ledger: new InputLedger() };
      ledgers.set(key, slot);
    }
    clearTimeout(slot.expiry);
    // The instance reconnected: its old connection (maybe half-open) no longer holds back credit.
    if (slot.owner && slot.owner !== cs) fanout.dropSink(slot.owner.conn);
    slot.owner = cs;
    slot.ledger.sink = (ack) => conn.notify(RelayNotification.inputAck, ack);
    cs.slot = slot;
    return input;
  };

  return { conns, state, holder, hello };
}
