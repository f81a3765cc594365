import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import { canRead, canSeeHost, canWrite, needCreate, needRead, needWrite } from '../core/grant.js';
import type { Logger } from '../core/log.js';
import { RpcError } from '../core/rpc-error.js';
import type { HostRouter, RpcConnection, RpcExtension } from '../core/rpc-types.js';
import { checkInputSize, checkTerminalQuota, type TerminalQuota } from '../terminals/terminal-quota.js';
import { claimHolder, type TerminalRegistry } from '../terminals/terminal-registry.js';
import { DEFAULT_REPLAY_ACTIONS, DEFAULT_REPLAY_BYTES } from './action-log.js';
import { adoptTerminal } from './adopt-terminal.js';
import { AhpHub, type AhpLimits } from './ahp-hub.js';
import { type AhpPeer, DEFAULT_HIGH_WATERMARK, DEFAULT_LOW_WATERMARK, PeerSet } from './ahp-peers.js';
import { ahpParamsSchemas, parseClientAction, parseNotification } from './ahp-schemas.js';
import { visibleEnvelope, visibleSnapshot } from './grant-view.js';
import { TerminalLocator } from './terminal-locator.js';
import { DEFAULT_CONTENT_LIMIT } from './terminal-reducer.js';
import {
  type ActionOrigin,
  AhpErrorCodes,
  type CreateTerminalParams,
  type CreateTerminalResult,
  type InitializeResult,
  isClientActionType,
  type ReconnectResult,
  ROOT_URI,
  type Snapshot,
  SUPPORTED_PROTOCOL_VERSIONS,
  type TerminalClientAction,
  type URI,
} from './types.js';
import { channelUri, checkClientUri, parseTerminalUri, uriToPath } from './uris.js';
import { negotiateProtocolVersion } from './version.js';

/** Size of a terminal created without cols/rows. */
export const DEFAULT_COLS = 80;
export const DEFAULT_ROWS = 24;
/** Default cap on published terminals. */
export const DEFAULT_MAX_TERMINALS = 256;
/** Default bound of one input write (`limits.maxInputBytes`). */
export const DEFAULT_MAX_INPUT_BYTES = 1024 * 1024;
/** Client ids remembered for their rawData choice (reconnect policy). */
const MAX_REMEMBERED_CLIENTS = 1024;

export interface AhpExtensionOptions {
  router: HostRouter;
  registry: TerminalRegistry;
  log?: Logger;
  limits?: Partial<AhpLimits> & Partial<TerminalQuota> & { maxInputBytes?: number };
}

/** The AHP RpcExtension plus what the server needs to tear it down. */
export interface AhpExtension extends RpcExtension {
  readonly hub: AhpHub;
  dispose(): void;
}

function reasonOf(err: unknown): string {
  if (isPtyRelayError(err)) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Creates the AHP terminal-channel extension: `initialize`, `subscribe`, `unsubscribe`,
 * `createTerminal`, `disposeTerminal`, `dispatchAction` and `reconnect` over the shared
 * TerminalRegistry and the router's providers. See docs/ahp.md.
 */
export function createAhpExtension(opts: AhpExtensionOptions): AhpExtension {
  const limits: AhpLimits = {
    contentLimit: opts.limits?.contentLimit ?? DEFAULT_CONTENT_LIMIT,
    replayActions: opts.limits?.replayActions ?? DEFAULT_REPLAY_ACTIONS,
    replayBytes: opts.limits?.replayBytes ?? DEFAULT_REPLAY_BYTES,
    highWatermark: opts.limits?.highWatermark ?? DEFAULT_HIGH_WATERMARK,
    lowWatermark: opts.limits?.lowWatermark ?? DEFAULT_LOW_WATERMARK,
  };
  const quota: TerminalQuota = {
    maxTerminals: opts.limits?.maxTerminals ?? DEFAULT_MAX_TERMINALS,
    maxTerminalsPerHost: opts.limits?.maxTerminalsPerHost ?? DEFAULT_MAX_TERMINALS,
    maxTerminalsPerClient: opts.limits?.maxTerminalsPerClient ?? DEFAULT_MAX_TERMINALS,
  };
  const maxInputBytes = opts.limits?.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES;
  const { router, registry, log } = opts;
  const hub = new AhpHub(router, registry, limits, log);
  const locator = new TerminalLocator(router, registry, hub, log);
  const rawClients = new Map<string, boolean>();

  const remember = (clientId: string, raw: boolean): void => {
    rawClients.delete(clientId);
    rawClients.set(clientId, raw);
    if (rawClients.size > MAX_REMEMBERED_CLIENTS) rawClients.delete(rawClients.keys().next().value!);
  };

  /** The peer of an initialized connection, or INVALID_ARGUMENT. */
  const peerOf = (conn: RpcConnection): AhpPeer & { clientId: string } => {
    const p = hub.peers.get(conn);
    if (!p?.clientId) throw new PtyRelayError('INVALID_ARGUMENT', 'send initialize (or reconnect) first');
    return p as AhpPeer & { clientId: string }; // Not wire data: the relay's own peer, clientId checked above.
  };

  const bind = (conn: RpcConnection, clientId: string): AhpPeer => {
    const p = hub.peers.add(conn);
    conn.clientId = clientId;
    p.clientId = clientId;
    return p;
  };

  /**
   * Publishes the running terminals among `uris` that this relay has no record of, or no history
   * of (it restarted): see adoptTerminal. A host that cannot be reached leaves its terminals out
   * (logged), as unknown URIs always were, unless `strict` (a single `subscribe`: its caller learns why).
   */
  const adopt = async (
    conn: RpcConnection,
    uris: readonly URI[],
    clientId: string,
    strict = false,
  ): Promise<void> => {
    // Adopting claims the terminal: only for a token that may drive it.
    const terminals = uris.filter((u) => {
      if (u === ROOT_URI) return false;
      const id = parseTerminalUri(u)?.id;
      // A client-chosen URI names no host: only a token that may drive terminals brings one
      // back; reading it is checked on the terminal it resolved to.
      return id === undefined ? conn.grant.scope !== 'read' : canWrite(conn.grant, id);
    });
    await Promise.all(
      terminals.map(async (uri) => {
        try {
          await adoptTerminal(hub, router, registry, uri, { kind: 'client', clientId }, (u) =>
            locator.findAlias(u),
          );
        } catch (err) {
          if (strict) throw err;
          log?.warn({ uri, err: reasonOf(err) }, 'ahp: cannot bring back a terminal');
        }
      }),
    );
  };

  /** The token may see `uri` (the root always; a terminal when it may read it). */
  const readable = (conn: RpcConnection, uri: URI): boolean => {
    if (uri === ROOT_URI) return true;
    const id = idOfUri(uri);
    return id !== undefined && canRead(conn.grant, id);
  };

  /** The terminal id a channel URI names: its minted form, or a published client-chosen alias. */
  const idOfUri = (uri: string): string | undefined =>
    hub.exists(uri) ? hub.channelOf(uri).id : parseTerminalUri(uri)?.id;

  const subscribe = (p: AhpPeer, uri: URI): Snapshot => {
    if (uri !== ROOT_URI) needRead(p.conn.grant, hub.channelOf(uri).id);
    const snap = visibleSnapshot(p.conn.grant, hub.snapshot(uri));
    p.subscriptions.add(snap.resource);
    hub.peers.holdUntilReplied(p);
    hub.reportCredit();
    return snap;
  };

  async function createTerminal(conn: RpcConnection, raw: Record<string, unknown>) {
    const p = peerOf(conn);
    const params: CreateTerminalParams = parseMessage(
      ahpParamsSchemas.createTerminal,
      raw,
      'createTerminal',
      'INVALID_ARGUMENT',
    );
    if (params.args !== undefined && params.command === undefined) {
      throw new PtyRelayError('INVALID_ARGUMENT', 'createTerminal.args needs command', {
        field: 'createTerminal.args',
      });
    }
    if (params.claim.kind === 'client' && params.claim.clientId !== p.clientId) {
      throw new PtyRelayError(
        'INVALID_ARGUMENT',
        'createTerminal.claim.clientId must name the calling client',
        {
          field: 'createTerminal.claim.clientId',
        },
      );
    }
    let host = params.host;
    // A minted channel names the host; any other URI is the client's alias for the terminal.
    const target = params.channel === undefined ? undefined : parseTerminalUri(params.channel);
    const alias = params.channel !== undefined && !target ? params.channel : undefined;
    if (target) {
      if (target.id) checkClientUri(params.channel!);
      if (host !== undefined && host !== target.host) {
        throw new PtyRelayError(
          'INVALID_ARGUMENT',
          `createTerminal.host ${host} does not match channel ${params.channel}`,
          {
            field: 'createTerminal.host',
          },
        );
      }
      host = target.host;
    } else if (alias !== undefined) checkClientUri(alias);
    host ??= 'local';
    needCreate(conn.grant, host);
    checkTerminalQuota(registry, quota, host, claimHolder(params.claim));
    const provider = router.providerFor(host);
    const release = alias === undefined ? undefined : await locator.reserve(alias);
    try {
      return await spawnTerminal(provider, host, params, alias);
    } finally {
      release?.();
    }
  }

  async function spawnTerminal(
    provider: ReturnType<HostRouter['providerFor']>,
    host: string,
    params: CreateTerminalParams,
    alias: string | undefined,
  ): Promise<CreateTerminalResult> {
    const cols = params.cols ?? DEFAULT_COLS;
    const rows = params.rows ?? DEFAULT_ROWS;
    const cwd = params.cwd !== undefined ? uriToPath(params.cwd) : undefined;
    const r = await provider.spawn({
      host,
      cols,
      rows,
      cwd,
      command: params.command,
      args: params.args,
      name: params.name,
      ...(alias !== undefined ? { alias } : {}),
    });
    const title = r.title || params.name || params.command || 'shell';
    const exitCode = r.exited?.exitCode;
    hub.openChannel(
      {
        id: r.id,
        incarnationId: r.incarnationId,
        title,
        claim: params.claim,
        cwd: r.cwd ?? cwd,
        cols: r.cols,
        rows: r.rows,
        exitCode,
        nextSeq: r.providerSequence.value,
        alias,
      },
      r.replay ? { data: r.replay, seq: r.providerSequence.value - r.replay.length } : undefined,
    );
    registry.add({
      id: r.id,
      host,
      claim: params.claim,
      title,
      name: params.name,
      cwd: r.cwd ?? cwd,
      cols: r.cols,
      rows: r.rows,
      exitCode,
      incarnationId: r.incarnationId,
      createdAt: Date.now(),
      alias,
    });
    return { channel: channelUri(r.id, alias) };
  }

  async function disposeTerminal(conn: RpcConnection, raw: Record<string, unknown>) {
    const p = peerOf(conn);
    const { channel } = parseMessage(
      ahpParamsSchemas.disposeTerminal,
      raw,
      'disposeTerminal',
      'INVALID_ARGUMENT',
    );
    const ch = await locator.resolve(channel, p.clientId);
    needWrite(conn.grant, ch.id, 'dispose');
    const rec = registry.checkClaim(ch.id, `client:${p.clientId}`);
    try {
      await router.providerFor(rec.host).shutdown(ch.id);
    } catch (err) {
      if (!isPtyRelayError(err, 'NOT_FOUND') && !isPtyRelayError(err, 'SESSION_EXITED')) throw err;
    }
    registry.remove(ch.id);
    return {};
  }

  /** Performs a client action; throws to have it rejected. */
  async function perform(
    conn: RpcConnection,
    origin: ActionOrigin,
    channel: URI,
    action: TerminalClientAction,
  ) {
    const ch = await locator.resolve(channel, origin.clientId);
    needWrite(conn.grant, ch.id, action.type === 'terminal/input' ? 'type into' : 'resize');
    const rec = registry.checkClaim(ch.id, `client:${origin.clientId}`);
    switch (action.type) {
      case 'terminal/input':
        checkInputSize(Buffer.byteLength(action.data), maxInputBytes);
        await router.providerFor(rec.host).write(ch.id, action.data);
        conn.noteInput(ch.id, Buffer.byteLength(action.data));
        // Keystrokes are echoed to their sender only (for write-ahead reconciliation).
        hub.notifyOrigin(ch.uri, action, origin);
        return;
      case 'terminal/resized':
        await router.providerFor(rec.host).resize(ch.id, action.cols, action.rows);
        break;
      default:
        break;
    }
    // The PTY may have gone while we waited.
    if (hub.channels.get(ch.id) === ch) hub.dispatch(ch, action, origin);
  }

  function dispatchAction(conn: RpcConnection, raw: Record<string, unknown>): void {
    const p = hub.peers.get(conn);
    if (!p?.clientId) {
      log?.debug({ conn: conn.connectionId }, 'ahp: dispatchAction before initialize ignored');
      return;
    }
    const params = parseNotification(
      ahpParamsSchemas.dispatchAction,
      raw,
      'dispatchAction',
      log,
      conn.connectionId,
    );
    if (!params) return; // No channel or clientSeq to address a rejection to: logged and dropped.
    const { channel } = params;
    // Unknown or non-client action types are ignored, as AHP requires.
    const { type } = params.action;
    if (!isClientActionType(type)) return;
    const origin: ActionOrigin = { clientId: p.clientId, clientSeq: params.clientSeq };
    let action: TerminalClientAction;
    try {
      action = parseClientAction(params.action);
    } catch (err) {
      // Only the checked type is echoed back: the payload failed its schema.
      hub.notifyOrigin(channel, { type }, origin, reasonOf(err));
      return;
    }
    perform(conn, origin, channel, action).catch((err) => {
      hub.notifyOrigin(channel, action, origin, reasonOf(err));
    });
  }

  async function initialize(conn: RpcConnection, raw: Record<string, unknown>): Promise<InitializeResult> {
    const params = parseMessage(ahpParamsSchemas.initialize, raw, 'initialize', 'INVALID_ARGUMENT');
    const { clientId } = params;
    const version = negotiateProtocolVersion(params.protocolVersions);
    if (!version) {
      throw new RpcError(
        AhpErrorCodes.UnsupportedProtocolVersion,
        `unsupported protocol version; this server speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
        { supportedVersions: [...SUPPORTED_PROTOCOL_VERSIONS] },
        true,
      );
    }
    const initial = (params.initialSubscriptions ?? []).filter((u) => readable(conn, u));
    await adopt(conn, initial, clientId);
    const p = bind(conn, clientId);
    p.rawData = params.capabilities?.rawData === true;
    remember(clientId, p.rawData);
    const snapshots = [subscribe(p, ROOT_URI)];
    for (const uri of initial) {
      if (uri !== ROOT_URI && hub.exists(uri)) snapshots.push(subscribe(p, uri));
    }
    return {
      protocolVersion: version,
      serverSeq: hub.actionLog.serverSeq,
      snapshots,
      capabilities: {
        rawData: p.rawData,
        createTerminal: { host: true, command: true, args: true },
        hosts: router.hosts().filter((h) => canSeeHost(conn.grant, h)),
      },
      serverInfo: { name: 'ptyrelay' },
    };
  }

  async function reconnect(conn: RpcConnection, raw: Record<string, unknown>): Promise<ReconnectResult> {
    const {
      clientId,
      lastSeenServerSeq: last,
      subscriptions: subs,
    } = parseMessage(ahpParamsSchemas.reconnect, raw, 'reconnect', 'INVALID_ARGUMENT');
    await adopt(conn, subs, clientId);
    const p = bind(conn, clientId);
    p.rawData = rawClients.get(clientId) ?? false;
    hub.peers.holdUntilReplied(p);
    const missing: URI[] = [];
    // The client says what it was subscribed to; that becomes this connection's set.
    p.subscriptions.clear();
    for (const uri of subs) {
      // What the token may not see is as gone to it as a terminal that ended.
      if ((uri === ROOT_URI || hub.exists(uri)) && readable(conn, uri)) p.subscriptions.add(uri);
      else missing.push(uri);
    }
    hub.reportCredit();
    // Raw-data clients cannot tell replayed output from bytes they got as binary frames.
    const entries = p.rawData ? undefined : hub.actionLog.since(last);
    if (!entries) {
      return {
        type: 'snapshot',
        snapshots: [...p.subscriptions].map((u) => visibleSnapshot(conn.grant, hub.snapshot(u))),
      };
    }
    const actions = entries
      .filter((e) => PeerSet.wants(p, e))
      .map((e) => visibleEnvelope(conn.grant, e.envelope));
    return { type: 'replay', actions, missing };
  }

  return {
    name: 'ahp',
    hub,
    methods: {
      initialize,
      reconnect,
      subscribe: async (conn, raw) => {
        const p = peerOf(conn);
        const { channel } = parseMessage(ahpParamsSchemas.subscribe, raw, 'subscribe', 'INVALID_ARGUMENT');
        // A minted URI is checked before anything is adopted; an alias once it resolved (subscribe).
        const named = parseTerminalUri(channel)?.id;
        if (named !== undefined) needRead(conn.grant, named);
        await adopt(conn, [channel], p.clientId, true);
        return { snapshot: subscribe(p, channel) };
      },
      createTerminal,
      disposeTerminal,
    },
    notifications: {
      unsubscribe: (conn, raw) => {
        const params = parseNotification(
          ahpParamsSchemas.unsubscribe,
          raw,
          'unsubscribe',
          log,
          conn.connectionId,
        );
        if (!params) return;
        hub.peers.get(conn)?.subscriptions.delete(params.channel);
        hub.reportCredit();
      },
      dispatchAction,
    },
    onConnection: (conn) => {
      conn.onClose(() => hub.peers.remove(conn));
    },
    dispose: () => hub.dispose(),
  };
}
