import { RelayMethod } from '../../provider/client/relay-protocol.js';
import { PtyRelayError } from '../../provider/errors.js';
import { relayLspQueryParamsSchema, relayLspRootParamsSchema } from '../../provider/wire/lsp-messages.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import { needCreate } from '../core/grant.js';
import type { HostCodeNavigation, HostRouter, RpcConnection, RpcMethodHandler } from '../core/rpc-types.js';

/** Per-connection state key: the signal that fires when the connection closes. */
const CLOSED_SIGNAL = 'lsp.closed';

/** Fires when `conn` closes: its queries still running are cancelled on their hosts. */
function closedSignal(conn: RpcConnection): AbortSignal {
  const known = conn.state.get(CLOSED_SIGNAL);
  if (known instanceof AbortSignal) return known;
  const ctl = new AbortController();
  conn.onClose(() => ctl.abort());
  conn.state.set(CLOSED_SIGNAL, ctl.signal);
  return ctl.signal;
}

function navigation(router: HostRouter): HostCodeNavigation {
  if (!router.lsp) throw new PtyRelayError('LSP_NOT_ENABLED', 'this relay has no code navigation');
  return router.lsp;
}

/**
 * `ptyrelay/lspQuery {host, query}` and `ptyrelay/lspRoot {host, filePath}` (docs/lsp.md). The
 * API speaks the seam's coordinates (0-based line, 0-based UTF-16 character); the CLI flips them.
 * Reading code on a host as its user needs a token that may create terminals there.
 */
export function lspMethods(router: HostRouter): Record<string, RpcMethodHandler> {
  const query: RpcMethodHandler = async (conn, params) => {
    const p = parseMessage(relayLspQueryParamsSchema, params, 'lspQuery', 'INVALID_ARGUMENT');
    needCreate(conn.grant, p.host);
    return navigation(router).query(p.host, p.query, closedSignal(conn));
  };
  const root: RpcMethodHandler = async (conn, params) => {
    const p = parseMessage(relayLspRootParamsSchema, params, 'lspRoot', 'INVALID_ARGUMENT');
    needCreate(conn.grant, p.host);
    return { root: await navigation(router).workspaceRoot(p.host, p.filePath) };
  };
  return { [RelayMethod.lspQuery]: query, [RelayMethod.lspRoot]: root };
}
