/**
 * The `ptyrelay/*` methods on one existing terminal (detach, resize, shutdown, signal, the
 * process and buffer queries, history reads, pause/resume, background votes) plus the agent and
 * daemon-admin methods that plug in through the same `onTerminal` wrapper. `onTerminal` checks
 * the token (drive or read) and, for methods that mutate, that the caller's client holds the
 * terminal's claim; the handlers are then one provider call each. Spawn, attach and the
 * connection-level methods stay in pty-extension.ts.
 */
import { relayParamsSchemas } from '../../provider/client/relay-params.js';
import { RelayMethod } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { parseWire } from '../../provider/wire/agent-messages.js';
import { historyParamsSchema } from '../../provider/wire/history-messages.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import { agentMethods } from '../agents/agent-rpc.js';
import { needRead, needWrite } from '../core/grant.js';
import type { RpcConnection, RpcMethodHandler } from '../core/rpc-types.js';
import { daemonMethods } from './daemon-methods.js';
import { type PtyMethodContext, termId } from './pty-method-context.js';

type TerminalFn = (
  p: IPtyProvider,
  id: string,
  params: Record<string, unknown>,
  conn: RpcConnection,
) => Promise<unknown>;

export function terminalMethods(core: PtyMethodContext): Record<string, RpcMethodHandler> {
  const onTerminal = terminalGuard(core);
  return {
    [RelayMethod.detach]: detach(core),
    ...providerCalls(core, onTerminal),
    // Per viewer: the terminal goes to the background only when every viewer asked (background-by-viewers.ts).
    // A view preference, as `attach`'s own vote is: what the token may read, it may background.
    [RelayMethod.setBackgrounded]: setBackgrounded(core),
    ...agentMethods(onTerminal),
    // A stopped daemon took its sessions along: what its host no longer lists leaves the registry.
    ...daemonMethods(core.router, forgetStopped(core)),
  };
}

/** What wraps a method on one terminal (the agent methods plug in through it too). */
type OnTerminal = (fn: TerminalFn, claim?: boolean, access?: 'read' | 'write') => RpcMethodHandler;

/**
 * A method on one terminal; `claim` requires the caller to own it, `access` is what the token
 * must allow (by default: a claimed method drives the terminal, the others read it).
 */
function terminalGuard(core: PtyMethodContext): OnTerminal {
  const { state, owned, providerForId } = core;
  return (fn, claim = true, access = claim ? 'write' : 'read') =>
    async (conn, params) => {
      const id = termId(params.id);
      if (access === 'write') needWrite(conn.grant, id);
      else needRead(conn.grant, id);
      const p = claim ? owned(state(conn), id) : providerForId(id);
      return (await fn(p, id, params, conn)) ?? {};
    };
}

/** `detach`: this connection's view of the terminal ends, and its input queued during an outage. */
function detach(core: PtyMethodContext): RpcMethodHandler {
  const { fanout, background, warn, state, providerForId } = core;
  return async (conn, params) => {
    const id = termId(params.id);
    const a = fanout.attachment(conn, id);
    if (a) fanout.detach(a);
    background.leave(conn, id, warn);
    // What this client typed during an outage and is still queued goes with it (INPUT_EXPIRED).
    const owner = state(conn).slot?.key;
    if (owner) providerForId(id).dropQueuedInput?.(owner, id, 'detached');
    return {};
  };
}

/** The methods that are one provider call on one terminal (resize to resume). */
function providerCalls(core: PtyMethodContext, onTerminal: OnTerminal): Record<string, RpcMethodHandler> {
  const { registry, fanout, background } = core;
  return {
    [RelayMethod.resize]: onTerminal((p, id, raw) => {
      const q = parseMessage(relayParamsSchemas.resize, raw, 'resize', 'INVALID_ARGUMENT');
      return p.resize(id, q.cols, q.rows);
    }),
    [RelayMethod.shutdown]: onTerminal(async (p, id, raw) => {
      const q = parseMessage(relayParamsSchemas.shutdown, raw, 'shutdown', 'INVALID_ARGUMENT');
      await p.shutdown(id, { immediate: q.immediate, deadlineMs: q.deadlineMs });
      fanout.forget(id);
      background.forget(id);
      registry.remove(id);
    }),
    [RelayMethod.signal]: onTerminal((p, id, raw) =>
      p.sendSignal(id, parseMessage(relayParamsSchemas.signal, raw, 'signal', 'INVALID_ARGUMENT').signal),
    ),
    [RelayMethod.getCwd]: onTerminal(async (p, id) => ({ cwd: await p.getCwd(id) }), false),
    [RelayMethod.getForegroundProcess]: onTerminal(
      async (p, id) => ({ process: await p.getForegroundProcess(id) }),
      false,
    ),
    [RelayMethod.hasChildProcesses]: onTerminal(
      async (p, id) => ({ value: await p.hasChildProcesses(id) }),
      false,
    ),
    [RelayMethod.probe]: onTerminal(
      async (p, id) => ({ alive: (await p.probePtyLiveness(id)) ?? null }),
      false,
    ),
    [RelayMethod.snapshot]: onTerminal(
      (p, id, raw) =>
        p.getBufferSnapshot(id, {
          scrollbackRows: parseMessage(relayParamsSchemas.snapshot, raw, 'snapshot', 'INVALID_ARGUMENT')
            .scrollbackRows,
        }),
      false,
    ),
    [RelayMethod.history]: onTerminal(readHistory, false),
    [RelayMethod.clear]: onTerminal((p, id) => p.clearBuffer(id)),
    [RelayMethod.pause]: onTerminal((p, id) => p.pauseProducer(id)),
    [RelayMethod.resume]: onTerminal((p, id) => p.resumeProducer(id)),
  };
}

/** `history`: one page of the terminal's output history, its bytes in base64. */
const readHistory: TerminalFn = async (p, id, q) => {
  const { fromSeq, maxBytes } = parseWire(historyParamsSchema, { ...q, id }, 'history');
  if (!p.readHistory)
    throw new PtyRelayError('INVALID_ARGUMENT', `the provider of ${id} keeps no output history`);
  const page = await p.readHistory(id, { fromSeq, maxBytes });
  return {
    fromSeq: page.fromSeq,
    startSeq: page.startSeq,
    headSeq: page.headSeq,
    data: Buffer.from(page.data).toString('base64'),
  };
};

/** `setBackgrounded`: this viewer's background vote on a terminal its client holds. */
function setBackgrounded(core: PtyMethodContext): RpcMethodHandler {
  const { background, state, owned } = core;
  return async (conn, params) => {
    const id = termId(params.id);
    needRead(conn.grant, id);
    owned(state(conn), id);
    const q = parseMessage(relayParamsSchemas.setBackgrounded, params, 'setBackgrounded', 'INVALID_ARGUMENT');
    await background.vote(id, conn, q.background === true);
    return {};
  };
}

/**
 * The terminals of a stopped daemon leave the registry. From the ids the daemon had, not from a
 * fresh listing of the host: that would start a new daemon at once in place of the stopped one.
 */
function forgetStopped(core: PtyMethodContext): Parameters<typeof daemonMethods>[1] {
  const { registry } = core;
  return (d) => {
    for (const id of d.terminals) registry.remove(id);
  };
}
