import { RelayMethod } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import {
  agentReadParamsSchema,
  agentSendParamsSchema,
  parseWire,
} from '../../provider/wire/agent-messages.js';
import type { RpcConnection, RpcMethodHandler } from '../core/rpc-types.js';

type TerminalFn = (
  p: IPtyProvider,
  id: string,
  params: Record<string, unknown>,
  conn: RpcConnection,
) => Promise<unknown>;
type OnTerminal = (fn: TerminalFn, claim?: boolean, access?: 'read' | 'write') => RpcMethodHandler;

/**
 * `ptyrelay/agentSend` and `ptyrelay/agentRead` for RelayClient (the CLI's `send`): the claim is
 * checked like any mutating call (a send also needs a token that may drive the terminal, a read
 * one that may see it); params are schema-validated before they reach the provider.
 */
export function agentMethods(onTerminal: OnTerminal): Record<string, RpcMethodHandler> {
  // One send at a time per terminal here too (the stub guards as well).
  const sending = new Set<string>();
  const need = (p: IPtyProvider) => {
    if (!p.agentSend || !p.agentRead)
      throw new PtyRelayError('INVALID_ARGUMENT', 'this host has no agent sends');
    return p as Required<Pick<IPtyProvider, 'agentSend' | 'agentRead'>>;
  };
  return {
    [RelayMethod.agentSend]: onTerminal(async (p, id, q, conn) => {
      const a = parseWire(agentSendParamsSchema, { ...q, id }, 'agentSend');
      if (a.data.length > 0) conn.noteInput(id, Buffer.byteLength(a.data));
      if (sending.has(id))
        throw new PtyRelayError('SEND_IN_PROGRESS', `${id} already has a send in progress`, { id });
      sending.add(id);
      try {
        return await need(p).agentSend(id, a.data, {
          timeoutMs: a.timeoutMs,
          ...(a.idleMs ? { idleMs: a.idleMs } : {}),
        });
      } finally {
        sending.delete(id);
      }
    }),
    [RelayMethod.agentRead]: onTerminal(
      async (p, id, q) => {
        const a = parseWire(agentReadParamsSchema, { ...q, id }, 'agentRead');
        return need(p).agentRead(id, { offset: a.offset, from: a.from, count: a.count });
      },
      true,
      'read',
    ),
  };
}
