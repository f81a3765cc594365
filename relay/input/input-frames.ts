import type { IPtyProvider } from '../../provider/contract.js';
import { FrameType } from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { needWrite } from '../core/grant.js';
import type { Logger } from '../core/log.js';
import type { RpcConnection } from '../core/rpc-types.js';
import { checkInputSize } from '../terminals/terminal-quota.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import type { InputLedger } from './input-ledger.js';

/**
 * What the Input frame path needs of a connection's state (relay/service/pty-connections.ts's
 * ConnState): the connection, the client instance's ledger once `ptyrelay/hello` bound one, and
 * the attaches in flight per terminal id.
 */
export interface InputSender {
  conn: RpcConnection;
  slot?: { key: string; origin: string; ledger: InputLedger };
  attaching: Map<string, Promise<void>>;
}

/**
 * The `ptyrelay/*` extension's `onBinary`: Input frames decoded, dropped when resent (the client
 * instance's ledger says), checked (token, size, claim) and written in order; other frames dropped.
 */
export function inputFrames<S extends InputSender>(deps: {
  registry: TerminalRegistry;
  log?: Logger;
  maxInputBytes: number;
  state: (conn: RpcConnection) => S;
  owned: (cs: S, id: string) => IPtyProvider;
}): (conn: RpcConnection, data: Buffer) => void {
  const { registry, log, state, owned } = deps;

  /**
   * One input frame: dropped when this relay saw it already, else written with its origin (the
   * client instance and its seq, so the daemon applies it once whichever relay forwards it); the
   * ledger acks in order. `resent`: the client may have sent it to another relay process before.
   */
  const input = (cs: S, id: string, inputSeq: number, data: Uint8Array, resent: boolean): void => {
    const slot = cs.slot;
    if (!slot) return void log?.warn({ conn: cs.conn.connectionId }, 'input before ptyrelay/hello dropped');
    const { ledger, key: owner } = slot;
    if (!ledger.receive(inputSeq)) return;
    const origin = { instance: slot.origin, seq: inputSeq, ...(resent ? { resent } : {}) };
    const write = async () => {
      needWrite(cs.conn.grant, id, 'type into');
      checkInputSize(data.length, deps.maxInputBytes);
      await owned(cs, id).write(id, data, { owner, origin });
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
      if (f.type === FrameType.Input || f.type === FrameType.InputResent)
        input(
          cs,
          f.id.includes('/') ? f.id : `local/${f.id}`,
          f.inputSeq,
          f.data,
          f.type === FrameType.InputResent,
        );
      else log?.warn({ type: f.type }, 'unexpected binary frame from client');
    }
  };
}
