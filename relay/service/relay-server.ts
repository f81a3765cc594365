import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { type AhpExtension, createAhpExtension } from '../ahp/ahp-extension.js';
import { originAllowed, presentedToken, selectSubprotocol } from '../core/auth.js';
import { canSeeHost, describeGrant, type Grant } from '../core/grant.js';
import { assertListenAllowed, loadTlsFiles, type TlsFiles } from '../core/listen-policy.js';
import { createLogger, type Logger } from '../core/log.js';
import type { HostRouter, RpcExtension } from '../core/rpc-types.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import { TokenAuthority } from '../tokens/token-authority.js';
import { createTokenExtension } from '../tokens/token-extension.js';
import { createOverviewExtension } from '../web/overview-extension.js';
import { fromOwnPage } from '../web/page-origin.js';
import { defaultWebRoot, WebAssets } from '../web/web-assets.js';
import { DEFAULT_FLOW_CONTROL, DEFAULT_LIMITS, type FlowControlConfig, type RelayLimits } from './config.js';
import { RelayMetrics } from './metrics.js';
import { RpcDispatchTable, WsRpcConnection } from './rpc-connection.js';

/** Default listen address (loopback only). */
export const DEFAULT_LISTEN_HOST = '127.0.0.1';
export const DEFAULT_LISTEN_PORT = 7681;
/** Close code sent to clients when the server shuts down. */
const CLOSE_GOING_AWAY = 1001;
/** How long `close()` waits for clients to finish the close handshake. */
const CLOSE_GRACE_MS = 1000;
/** Close code for a connection whose token was revoked or expired (application range). */
export const CLOSE_TOKEN_ENDED = 4401;
/** A revoked token's connection is cut this long after its close frame if the peer stays silent. */
const TOKEN_ENDED_GRACE_MS = 500;

export interface RelayServerOptions {
  /** Default 127.0.0.1:7681; port 0 picks a free port. Beyond loopback it needs `tls` or `insecureListen`. */
  listen?: { host: string; port: number };
  /** The startup bearer token (admin; see token.ts). Ignored when `auth` is given. */
  token?: string;
  /** Startup and scoped tokens (see tokens/); default: the startup `token` alone. */
  auth?: TokenAuthority;
  /** Serve https/wss with this certificate and key (PEM files). */
  tls?: TlsFiles;
  /** Accept a non-loopback listen address without TLS (`--insecure-listen`). */
  insecureListen?: boolean;
  /** Browser Origins allowed to connect; requests without Origin (non-browser clients) always pass. */
  allowedOrigins?: string[];
  router: HostRouter;
  registry: TerminalRegistry;
  /** Extra extensions (the AHP one is always installed, first). */
  extensions?: RpcExtension[];
  log?: Logger;
  /** Optional overrides of the config's `limits` (defaults: DEFAULT_LIMITS). */
  limits?: Partial<RelayLimits>;
  /** Optional overrides of the config's `flowControl` (defaults: DEFAULT_FLOW_CONTROL). */
  flowControl?: Partial<FlowControlConfig>;
  /** HTTP routes tried first, in order; each answers (true) or passes (false). Each does its own auth. */
  httpRoutes?: HttpRoute[];
  /** The web page (docs/web.md): its built files (default: dist/web when built), or false for none. */
  web?: { root?: string } | false;
}

/** An extra HTTP route of the relay (e.g. MCP at /mcp). */
export type HttpRoute = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

export interface RelayServer {
  /** `ws://HOST:PORT` (`wss://` with TLS) */
  url: string;
  port: number;
  /** `http://HOST:PORT` (`https://` with TLS) */
  httpUrl: string;
  /** The web page is served at `httpUrl/` (it was built). */
  webServed: boolean;
  /** Who may do what (the startup token and the scoped ones). */
  auth: TokenAuthority;
  /** The installed AHP extension (tests, diagnostics). */
  ahp: AhpExtension;
  close(): Promise<void>;
}

function rejectUpgrade(socket: Duplex, status: number, text: string, detail = text): void {
  const body = `${detail}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  socket.destroy();
}

function unauthorized(res: ServerResponse): void {
  res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain' });
  res.end('unauthorized\n');
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(text);
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Starts the relay service: an HTTP server (`/healthz`, `/metrics`) and a WebSocket server on
 * the same port speaking JSON-RPC 2.0. Upgrades need the token (`Authorization: Bearer` or a
 * `ptyrelay.token.<t>` subprotocol) and an allowed Origin, else 401/403 before the upgrade.
 */
export async function startRelayServer(opts: RelayServerOptions): Promise<RelayServer> {
  if (!opts.auth && !opts.token) throw new Error('startRelayServer needs a token');
  const log = opts.log ?? createLogger({ name: 'ptyrelay-server' });
  const listen = opts.listen ?? { host: DEFAULT_LISTEN_HOST, port: DEFAULT_LISTEN_PORT };
  assertListenAllowed(listen.host, opts.tls !== undefined, opts.insecureListen === true);
  const tls = opts.tls ? loadTlsFiles(opts.tls) : undefined;
  const ownAuth = opts.auth === undefined;
  const auth = opts.auth ?? new TokenAuthority({ startupToken: opts.token!, log });
  const grantOf = (req: IncomingMessage): Grant | undefined => auth.authenticate(presentedToken(req));
  const allowedOrigins = opts.allowedOrigins ?? [];
  const limits = { ...DEFAULT_LIMITS, ...opts.limits };
  const flow = { ...DEFAULT_FLOW_CONTROL, ...opts.flowControl };
  const metrics = new RelayMetrics(opts.router, opts.registry);
  const ahp = createAhpExtension({
    router: opts.router,
    registry: opts.registry,
    log: log.child({ ext: 'ahp' }),
    limits: {
      contentLimit: limits.contentBytes,
      replayActions: limits.replayActions,
      replayBytes: limits.replayBytes,
      maxTerminals: limits.maxTerminals,
      maxTerminalsPerHost: limits.maxTerminalsPerHost,
      maxTerminalsPerClient: limits.maxTerminalsPerClient,
      maxInputBytes: limits.maxInputBytes,
      highWatermark: flow.highWatermark,
      lowWatermark: flow.lowWatermark,
    },
  });
  const overview = createOverviewExtension({ router: opts.router, registry: opts.registry });
  const tokens = createTokenExtension(auth);
  const table = new RpcDispatchTable([ahp, ...(opts.extensions ?? []), overview, tokens]);
  const webRoot = opts.web === false ? undefined : (opts.web?.root ?? defaultWebRoot());
  const web = webRoot ? new WebAssets(webRoot) : undefined;
  if (!web && opts.web !== false) log.info('web page not built (npm run build); serving the API only');

  const onRequest = (req: IncomingMessage, res: ServerResponse) => void handleHttp(req, res);
  const http: Server = tls
    ? createHttpsServer({ cert: tls.cert, key: tls.key }, onRequest)
    : createServer(onRequest);

  async function handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://relay').pathname;
    for (const route of opts.httpRoutes ?? []) if (await route(req, res)) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendJson(res, 405, { error: 'method not allowed' });
      return;
    }
    if (path === '/healthz') {
      // Without a token: only that the relay runs (host names say where it reaches). A token that
      // does not authenticate gets 401, so the web page can tell a wrong token from a down relay.
      const grant = grantOf(req);
      if (!grant && presentedToken(req) !== undefined) return unauthorized(res);
      if (!grant) return sendJson(res, 200, { ok: true });
      const hosts = Object.fromEntries(
        Object.entries(metrics.linkStates()).filter(([h]) => canSeeHost(grant, h)),
      );
      return sendJson(res, 200, { ok: true, hosts });
    }
    if (path === '/metrics') {
      if (grantOf(req)?.scope !== 'admin') return unauthorized(res);
      try {
        const text = await metrics.text();
        res.writeHead(200, { 'content-type': metrics.contentType });
        res.end(text);
      } catch (err) {
        sendJson(res, 500, { error: (err as Error).message });
      }
      return;
    }
    if (web?.handle(path, req, res)) return;
    sendJson(res, 404, { error: 'not found' });
  }

  /** Upgrades counted from the moment they are accepted (limits.maxConnections). */
  let openConnections = 0;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxMessageBytes,
    handleProtocols: (protocols) => selectSubprotocol(protocols),
  });

  http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!originAllowed(req, allowedOrigins) && !(web && fromOwnPage(req, listen.host, port, scheme))) {
      log.info({ origin: req.headers.origin }, 'upgrade refused: origin not allowed');
      rejectUpgrade(socket, 403, 'Forbidden');
      return;
    }
    const grant = grantOf(req);
    if (!grant) {
      log.info({ remote: req.socket.remoteAddress }, 'upgrade refused: bad, revoked or expired token');
      rejectUpgrade(socket, 401, 'Unauthorized');
      return;
    }
    if (openConnections >= limits.maxConnections) {
      log.warn(
        { remote: req.socket.remoteAddress, max: limits.maxConnections },
        'upgrade refused: connection limit',
      );
      rejectUpgrade(
        socket,
        503,
        'Service Unavailable',
        `LIMIT_EXCEEDED: the relay has ${openConnections} connections (limits.maxConnections = ${limits.maxConnections})`,
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      openConnections++;
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
      byToken(grant.tokenId).add(conn);
      metrics.connectionOpened();
      metrics.track(conn);
      conn.onClose(() => {
        openConnections--;
        metrics.connectionClosed();
        byToken(grant.tokenId).delete(conn);
        log.info(who, 'connection closed');
      });
      for (const ext of table.extensions) {
        try {
          ext.onConnection?.(conn);
        } catch (err) {
          log.warn({ err: (err as Error).message, ext: ext.name }, 'onConnection failed');
        }
      }
    });
  });

  /** Open connections per token id, so a revoked token's are closed. */
  const connsByToken = new Map<string, Set<WsRpcConnection>>();
  const byToken = (id: string): Set<WsRpcConnection> => {
    const known = connsByToken.get(id);
    if (known) return known;
    const set = new Set<WsRpcConnection>();
    connsByToken.set(id, set);
    return set;
  };
  const offEnded = auth.onEnded((ids) => {
    for (const id of ids) {
      for (const conn of connsByToken.get(id) ?? [])
        conn.closeWithin(TOKEN_ENDED_GRACE_MS, CLOSE_TOKEN_ENDED, 'token revoked or expired');
      connsByToken.delete(id);
    }
  });
  const scheme = tls ? 'https' : 'http';

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(listen.port, listen.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const port = (http.address() as AddressInfo).port;
  const hostForUrl = urlHost(listen.host);
  log.info({ host: listen.host, port, tls: tls !== undefined }, 'relay service listening');

  let closing: Promise<void> | undefined;
  return {
    url: `${tls ? 'wss' : 'ws'}://${hostForUrl}:${port}`,
    httpUrl: `${scheme}://${hostForUrl}:${port}`,
    webServed: web !== undefined,
    port,
    ahp,
    auth,
    close() {
      closing ??= (async () => {
        for (const ws of wss.clients) ws.close(CLOSE_GOING_AWAY, 'server shutting down');
        // Clients get a moment to answer the close handshake, then they are cut off.
        const grace = setTimeout(() => {
          for (const ws of wss.clients) ws.terminate();
        }, CLOSE_GRACE_MS);
        await new Promise<void>((resolve) => wss.close(() => resolve()));
        clearTimeout(grace);
        await new Promise<void>((resolve) => {
          http.close(() => resolve());
          http.closeAllConnections();
        });
        ahp.dispose();
        overview.dispose();
        metrics.dispose();
        offEnded();
        if (ownAuth) auth.dispose();
        else auth.audit.flush();
      })();
      return closing;
    },
  };
}
