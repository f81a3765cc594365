import { RelayMethod } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import {
  agentReadParamsSchema,
  agentSendParamsSchema,
  parseWire,
} from '../../provider/wire/agent-messages.js';
import { commandsParamsSchema } from '../../provider/wire/command-messages.js';
import type { RpcConnection, RpcMethodHandler } from '../core/rpc-types.js';

type TerminalFn = (
  p: IPtyProvider,
  id: string,
  params: Record<string, unknown>,
  conn: RpcConnection,
) => Promise<unknown>;
type OnTerminal = (fn: TerminalFn, claim?: boolean, access?: 'read' | 'write') => RpcMethodHandler;

/**
 * `ptyrelay/agentSend`, `ptyrelay/agentRead` and `ptyrelay/commands` for RelayClient (the CLI's
 * `send` and `commands`): the claim is checked like any mutating call (a send also needs a token
 * that may drive the terminal, a read one that may see it); `commands` needs no claim, only a
 * token that may see the terminal. Params are schema-validated before they reach the provider.
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
        return need(p).agentRead(id, { offset: a.offset, from: a.from, count: a.count, command: a.command });
      },
      true,
      'read',
    ),
    // What the terminal ran: seen with a token that may read it, claimed or not (like a snapshot).
    [RelayMethod.commands]: onTerminal(
      async (p, id, q) => {
        const a = parseWire(commandsParamsSchema, { ...q, id }, 'commands');
        if (!p.commands)
          throw new PtyRelayError('INVALID_ARGUMENT', `the host of ${id} keeps no command records`);
        return p.commands(id, { count: a.count });
      },
      false,
      'read',
    ),
  };
}
