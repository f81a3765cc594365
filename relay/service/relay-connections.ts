/**
 * The relay's WebSocket side: an upgrade needs an allowed Origin (or the relay's own web page),
 * a token that authenticates and room under `limits.maxConnections`, else it is refused with
 * 403, 401 or 503 before the upgrade; an accepted one becomes a WsRpcConnection over the
 * extensions' dispatch table. The connections of a revoked or expired token are closed.
 * `ws` (and the tls, https and zlib modules it requires) loads with the first upgrade: an idle
 * relay that no client reached does not hold it (about 4 MB of RSS on Node 24).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import { originAllowed, presentedToken, selectSubprotocol } from '../core/auth.js';
import { describeGrant, type Grant } from '../core/grant.js';
import type { Logger } from '../core/log.js';
import type { TokenAuthority } from '../tokens/token-authority.js';
import type { RelayMetrics } from './metrics.js';
import { type RpcDispatchTable, WsRpcConnection } from './rpc-connection.js';

/** Close code sent to clients when the server shuts down. */
const CLOSE_GOING_AWAY = 1001;
/** How long `close()` waits for clients to finish the close handshake. */
const CLOSE_GRACE_MS = 1000;
/** Close code for a connection whose token was revoked or expired (application range). */
export const CLOSE_TOKEN_ENDED = 4401;
/** A revoked token's connection is cut this long after its close frame if the peer stays silent. */
const TOKEN_ENDED_GRACE_MS = 500;

function rejectUpgrade(socket: Duplex, status: number, text: string, detail = text): void {
  const body = `${detail}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  socket.destroy();
}

export interface RelayConnectionsDeps {
  table: RpcDispatchTable;
  auth: TokenAuthority;
  metrics: RelayMetrics;
  log: Logger;
  limits: { maxConnections: number; maxMessageBytes: number };
  /** Browser Origins allowed to connect; requests without Origin always pass. */
  allowedOrigins: string[];
  /** True when the request comes from the relay's own web page. */
  ownPage: (req: IncomingMessage) => boolean;
}

/** The upgrades and open WebSocket connections of one relay server. */
export class RelayConnections {
  /** Made when the first upgrade is accepted (see the file's comment). */
  private wss?: WebSocketServer;
  private wssLoading?: Promise<WebSocketServer>;
  /** Upgrades counted from the moment they are accepted (limits.maxConnections). */
  private openConnections = 0;
  /** Accepted upgrades waiting for `ws` to load (the first ones only), counted against the limit. */
  private waitingUpgrades = 0;
  private closed = false;
  /** Open connections per token id, so a revoked token's are closed. */
  private readonly connsByToken = new Map<string, Set<WsRpcConnection>>();
  private readonly offEnded: () => void;

  constructor(private readonly deps: RelayConnectionsDeps) {
    this.offEnded = deps.auth.onEnded((ids) => {
      for (const id of ids) {
        for (const conn of this.connsByToken.get(id) ?? [])
          conn.closeWithin(TOKEN_ENDED_GRACE_MS, CLOSE_TOKEN_ENDED, 'token revoked or expired');
        this.connsByToken.delete(id);
      }
    });
  }

  /** The HTTP server's `upgrade` listener. */
  readonly upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const { log, limits } = this.deps;
    if (!originAllowed(req, this.deps.allowedOrigins) && !this.deps.ownPage(req)) {
      log.info({ origin: req.headers.origin }, 'upgrade refused: origin not allowed');
      rejectUpgrade(socket, 403, 'Forbidden');
      return;
    }
    const grant = this.deps.auth.authenticate(presentedToken(req));
    if (!grant) {
      log.info({ remote: req.socket.remoteAddress }, 'upgrade refused: bad, revoked or expired token');
      rejectUpgrade(socket, 401, 'Unauthorized');
      return;
    }
    if (this.openConnections + this.waitingUpgrades >= limits.maxConnections) {
      log.warn(
        { remote: req.socket.remoteAddress, max: limits.maxConnections },
        'upgrade refused: connection limit',
      );
      rejectUpgrade(
        socket,
        503,
        'Service Unavailable',
        `LIMIT_EXCEEDED: the relay has ${this.openConnections} connections (limits.maxConnections = ${limits.maxConnections})`,
      );
      return;
    }
    if (this.wss) {
      this.wss.handleUpgrade(req, socket, head, (ws) => this.open(ws, req, socket, grant));
      return;
    }
    this.waitingUpgrades++;
    this.server().then(
      (wss) => {
        this.waitingUpgrades--;
        if (this.closed) rejectUpgrade(socket, 503, 'Service Unavailable', 'the relay is shutting down');
        else wss.handleUpgrade(req, socket, head, (ws) => this.open(ws, req, socket, grant));
      },
      (err: Error) => {
        this.waitingUpgrades--;
        log.error({ err: err.message }, 'upgrade failed: the WebSocket server did not load');
        rejectUpgrade(socket, 500, 'Internal Server Error');
      },
    );
  };

  /** The WebSocket server, made once; a load that failed is tried again by the next upgrade. */
  private server(): Promise<WebSocketServer> {
    this.wssLoading ??= import('ws').then(
      ({ WebSocketServer }) => {
        this.wss = new WebSocketServer({
          noServer: true,
          maxPayload: this.deps.limits.maxMessageBytes,
          handleProtocols: (protocols) => selectSubprotocol(protocols),
        });
        return this.wss;
      },
      (err: unknown) => {
        this.wssLoading = undefined;
        throw err;
      },
    );
    return this.wssLoading;
  }

  /** An accepted upgrade: the connection, counted, tracked by token, handed to every extension. */
  private open(ws: WebSocket, req: IncomingMessage, socket: Duplex, grant: Grant): void {
    const { table, auth, metrics, log } = this.deps;
    this.openConnections++;
    const conn = new WsRpcConnection(ws, table, {
      log,
      grant,
      audit: auth.audit,
      onSent: (kind, bytes) => metrics.sent(kind, bytes),
      socket,
    });
    const who = {
      conn: conn.connectionId,
      tokenName: grant.name,
      scope: grant.scope,
      remote: req.socket.remoteAddress,
    };
    log.info({ ...who, reach: describeGrant(grant) }, 'connection opened');
    this.byToken(grant.tokenId).add(conn);
    metrics.track(conn);
    conn.onClose(() => {
      this.openConnections--;
      this.byToken(grant.tokenId).delete(conn);
      log.info(who, 'connection closed');
    });
    for (const ext of table.extensions) {
      try {
        ext.onConnection?.(conn);
      } catch (err) {
        log.warn({ err: (err as Error).message, ext: ext.name }, 'onConnection failed');
      }
    }
  }

  private byToken(id: string): Set<WsRpcConnection> {
    const known = this.connsByToken.get(id);
    if (known) return known;
    const set = new Set<WsRpcConnection>();
    this.connsByToken.set(id, set);
    return set;
  }

  /** Closes every connection; those that do not answer the close handshake in time are cut off. */
  async close(): Promise<void> {
    this.closed = true;
    const { wss } = this;
    if (!wss) return;
    for (const ws of wss.clients) ws.close(CLOSE_GOING_AWAY, 'server shutting down');
    // Clients get a moment to answer the close handshake, then they are cut off.
    const grace = setTimeout(() => {
      for (const ws of wss.clients) ws.terminate();
    }, CLOSE_GRACE_MS);
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    clearTimeout(grace);
  }

  /** Stops following the token authority (revoked and expired tokens). */
  dispose(): void {
    this.offEnded();
  }
}
