/**
 * The client side of the `ptyrelay/*` extension: one ConnState per connection (created on first
 * use, torn down on close), the client identity `ptyrelay/hello` binds to it, and the input path.
 * Input de-duplication is per client instance, not per connection: an instance's InputLedger
 * outlives its connection for LEDGER_TTL_MS so a reconnect resends without typing twice, and the
 * newest connection of the instance owns it (acks go there). Binary Input frames are decoded here,
 * dropped when resent, checked (token, size, claim) and written in order.
 */

import { RelayNotification } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { FrameDecoder, FrameType } from '../../provider/wire/frame-codec.js';
import { needWrite } from '../core/grant.js';
import type { Logger } from '../core/log.js';
import type { HostRouter, RpcConnection } from '../core/rpc-types.js';
import type { RouterBackground } from '../terminals/background-votes.js';
import { checkInputSize } from '../terminals/terminal-quota.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import { InputLedger } from './input-ledger.js';
import type { RelayFanout } from './relay-fanout.js';

/** Input de-duplication state of a client instance outlives its last connection by this long. */
const LEDGER_TTL_MS = 10 * 60_000;

/** A client instance's input ledger and the connection currently speaking for it. */
interface LedgerSlot {
  key: string;
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
      slot = { key, ledger: new InputLedger() };
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

/** The extension's `onBinary`: Input frames written through the client's ledger; others dropped. */
export function inputFrames(deps: {
  registry: TerminalRegistry;
  log?: Logger;
  maxInputBytes: number;
  state: (conn: RpcConnection) => ConnState;
  owned: (cs: ConnState, id: string) => IPtyProvider;
}): (conn: RpcConnection, data: Buffer) => void {
  const { registry, log, state, owned } = deps;

  /** One input frame: dropped when resent, else written; the ledger acks in order. */
  const input = (cs: ConnState, id: string, inputSeq: number, data: Uint8Array): void => {
    const ledger = cs.slot?.ledger;
    if (!ledger) return void log?.warn({ conn: cs.conn.connectionId }, 'input before ptyrelay/hello dropped');
    if (!ledger.receive(inputSeq)) return;
    const owner = ledger === cs.slot?.ledger ? cs.slot.key : undefined;
    const write = async () => {
      needWrite(cs.conn.grant, id, 'type into');
      checkInputSize(data.length, deps.maxInputBytes);
      await owned(cs, id).write(id, data, { owner });
      cs.conn.noteInput(id, data.length);
    };
    // A restarted relay learns a terminal's claim from the client's re-attach; input the client
    // resends before that attach completed (e.g. first contact with a host deploying a new build)
    // waits for it instead of failing NOT_FOUND.
    const attaching = registry.find(id) ? undefined : cs.attaching.get(id);
    let done: Promise<void>;
    try {
      done = attaching ? attaching.then(write) : write();
    } catch (err) {
      done = Promise.reject(err);
    }
    done.then(
      () => ledger.finish(inputSeq),
      (err) => ledger.finish(inputSeq, err),
    );
  };

  return (conn, data) => {
    const cs = state(conn);
    let frames: ReturnType<FrameDecoder['push']>;
    try {
      frames = new FrameDecoder().push(data);
    } catch (err) {
      log?.warn({ err: (err as Error).message, conn: conn.connectionId }, 'bad binary message dropped');
      return;
    }
    for (const f of frames) {
      if (f.type === FrameType.Input)
        input(cs, f.id.includes('/') ? f.id : `local/${f.id}`, f.inputSeq, f.data);
      else log?.warn({ type: f.type }, 'unexpected binary frame from client');
    }
  };
}
