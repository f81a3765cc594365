import { parseMessage } from '../../provider/wire/parse-message.js';
import { canRead, canSeeHost, canWrite, needRead } from '../core/grant.js';
import { RpcError } from '../core/rpc-error.js';
import type { RpcConnection } from '../core/rpc-types.js';
import { adoptTerminal } from './adopt-terminal.js';
import { type AhpContext, initializedPeer, reasonOf } from './ahp-context.js';
import { type AhpPeer, PeerSet } from './ahp-peers.js';
import { ahpParamsSchemas, parseNotification } from './ahp-schemas.js';
import { visibleEnvelope, visibleSnapshot } from './root-catalog-filter.js';
import {
  AhpErrorCodes,
  type InitializeResult,
  type ReconnectResult,
  ROOT_URI,
  type Snapshot,
  SUPPORTED_PROTOCOL_VERSIONS,
  type URI,
} from './types.js';
import { parseTerminalUri } from './uris.js';
import { negotiateProtocolVersion } from './version.js';

/** Client ids remembered for their rawData choice (reconnect policy). */
const MAX_REMEMBERED_CLIENTS = 1024;

type Params = Record<string, unknown>;

/**
 * Who a connection is and what it sees: the AHP methods `initialize`, `reconnect`, `subscribe`
 * and `unsubscribe`. Terminals named by a client that this relay has no record of (it restarted)
 * are brought back first (adoptTerminal); what the token may not read is left out.
 */
export class AhpSubscriptions {
  /** Per client id, whether it asked for raw data (a reconnect keeps that choice). */
  private readonly rawClients = new Map<string, boolean>();

  constructor(private readonly ctx: AhpContext) {}

  async initialize(conn: RpcConnection, raw: Params): Promise<InitializeResult> {
    const { hub, router } = this.ctx;
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
    const initial = (params.initialSubscriptions ?? []).filter((u) => this.readable(conn, u));
    await this.adopt(conn, initial, clientId);
    const p = this.bind(conn, clientId);
    p.rawData = params.capabilities?.rawData === true;
    this.remember(clientId, p.rawData);
    const snapshots = [this.addSubscription(p, ROOT_URI)];
    for (const uri of initial) {
      if (uri !== ROOT_URI && hub.exists(uri)) snapshots.push(this.addSubscription(p, uri));
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

  async reconnect(conn: RpcConnection, raw: Params): Promise<ReconnectResult> {
    const { hub } = this.ctx;
    const {
      clientId,
      lastSeenServerSeq: last,
      subscriptions: subs,
    } = parseMessage(ahpParamsSchemas.reconnect, raw, 'reconnect', 'INVALID_ARGUMENT');
    await this.adopt(conn, subs, clientId);
    const p = this.bind(conn, clientId);
    p.rawData = this.rawClients.get(clientId) ?? false;
    hub.peers.holdUntilReplied(p);
    const missing: URI[] = [];
    // The client says what it was subscribed to; that becomes this connection's set.
    p.subscriptions.clear();
    for (const uri of subs) {
      // What the token may not see is as gone to it as a terminal that ended.
      if ((uri === ROOT_URI || hub.exists(uri)) && this.readable(conn, uri)) p.subscriptions.add(uri);
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

  async subscribe(conn: RpcConnection, raw: Params): Promise<{ snapshot: Snapshot }> {
    const p = initializedPeer(this.ctx.hub, conn);
    const { channel } = parseMessage(ahpParamsSchemas.subscribe, raw, 'subscribe', 'INVALID_ARGUMENT');
    // A minted URI is checked before anything is adopted; an alias once it resolved (addSubscription).
    const named = parseTerminalUri(channel)?.id;
    if (named !== undefined) needRead(conn.grant, named);
    await this.adopt(conn, [channel], p.clientId, true);
    return { snapshot: this.addSubscription(p, channel) };
  }

  unsubscribe(conn: RpcConnection, raw: Params): void {
    const { hub, log } = this.ctx;
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
  }

  private remember(clientId: string, raw: boolean): void {
    this.rawClients.delete(clientId);
    this.rawClients.set(clientId, raw);
    if (this.rawClients.size > MAX_REMEMBERED_CLIENTS) {
      this.rawClients.delete(this.rawClients.keys().next().value!);
    }
  }

  private bind(conn: RpcConnection, clientId: string): AhpPeer {
    const p = this.ctx.hub.peers.add(conn);
    conn.clientId = clientId;
    p.clientId = clientId;
    return p;
  }

  /**
   * Publishes the running terminals among `uris` that this relay has no record of, or no history
   * of (it restarted): see adoptTerminal. A host that cannot be reached leaves its terminals out
   * (logged), as unknown URIs always were, unless `strict` (a single `subscribe`: its caller learns why).
   */
  private async adopt(conn: RpcConnection, uris: readonly URI[], clientId: string, strict = false) {
    const { hub, router, registry, locator, log } = this.ctx;
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
  }

  /** The token may see `uri` (the root always; a terminal when it may read it). */
  private readable(conn: RpcConnection, uri: URI): boolean {
    if (uri === ROOT_URI) return true;
    const id = this.idOfUri(uri);
    return id !== undefined && canRead(conn.grant, id);
  }

  /** The terminal id a channel URI names: its minted form, or a published client-chosen alias. */
  private idOfUri(uri: string): string | undefined {
    const { hub } = this.ctx;
    return hub.exists(uri) ? hub.channelOf(uri).id : parseTerminalUri(uri)?.id;
  }

  private addSubscription(p: AhpPeer, uri: URI): Snapshot {
    const { hub } = this.ctx;
    if (uri !== ROOT_URI) needRead(p.conn.grant, hub.channelOf(uri).id);
    const snap = visibleSnapshot(p.conn.grant, hub.snapshot(uri));
    p.subscriptions.add(snap.resource);
    hub.peers.holdUntilReplied(p);
    hub.reportCredit();
    return snap;
  }
}
