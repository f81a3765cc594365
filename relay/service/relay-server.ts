import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { type AhpExtension, createAhpExtension } from '../ahp/ahp-extension.js';
import { createLogger, type Logger } from '../log.js';
import { createOverviewExtension } from '../web/overview-extension.js';
import { fromOwnPage } from '../web/page-origin.js';
import { defaultWebRoot, WebAssets } from '../web/web-assets.js';
import { isAuthorized, originAllowed, selectSubprotocol } from './auth.js';
import { DEFAULT_FLOW_CONTROL, DEFAULT_LIMITS, type FlowControlConfig, type RelayLimits } from './config.js';
import { RelayMetrics } from './metrics.js';
import { RpcDispatchTable, WsRpcConnection } from './rpc-connection.js';
import type { HostRouter, RpcExtension } from './rpc-types.js';
import type { TerminalRegistry } from './terminal-registry.js';

/** Default listen address (loopback only). */
export const DEFAULT_LISTEN_HOST = '127.0.0.1';
export const DEFAULT_LISTEN_PORT = 7681;
/** Close code sent to clients when the server shuts down. */
const CLOSE_GOING_AWAY = 1001;
/** How long `close()` waits for clients to finish the close handshake. */
const CLOSE_GRACE_MS = 1000;

export interface RelayServerOptions {
  /** Default 127.0.0.1:7681; port 0 picks a free port. */
  listen?: { host: string; port: number };
  /** Required bearer token (see token.ts). */
  token: string;
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
  /** `ws://HOST:PORT` */
  url: string;
  port: number;
  /** `http://HOST:PORT` */
  httpUrl: string;
  /** The installed AHP extension (tests, diagnostics). */
  ahp: AhpExtension;
  close(): Promise<void>;
}

function rejectUpgrade(socket: Duplex, status: number, text: string): void {
  const body = `${text}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  socket.destroy();
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
  if (!opts.token) throw new Error('startRelayServer needs a token');
  const log = opts.log ?? createLogger({ name: 'ptyrelay-server' });
  const listen = opts.listen ?? { host: DEFAULT_LISTEN_HOST, port: DEFAULT_LISTEN_PORT };
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
      highWatermark: flow.highWatermark,
      lowWatermark: flow.lowWatermark,
    },
  });
  const overview = createOverviewExtension({ router: opts.router, registry: opts.registry });
  const table = new RpcDispatchTable([ahp, ...(opts.extensions ?? []), overview]);
  const webRoot = opts.web === false ? undefined : (opts.web?.root ?? defaultWebRoot());
  const web = webRoot ? new WebAssets(webRoot) : undefined;
  if (!web && opts.web !== false) log.info('web page not built (npm run build); serving the API only');

  const http = createServer((req, res) => {
    void handleHttp(req, res);
  });

  async function handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://relay').pathname;
    for (const route of opts.httpRoutes ?? []) if (await route(req, res)) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendJson(res, 405, { error: 'method not allowed' });
      return;
    }
    if (path === '/healthz') {
      sendJson(res, 200, { ok: true, hosts: metrics.linkStates() });
      return;
    }
    if (path === '/metrics') {
      if (!isAuthorized(req, opts.token)) {
        res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain' });
        res.end('unauthorized\n');
        return;
      }
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

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxMessageBytes,
    handleProtocols: (protocols) => selectSubprotocol(protocols),
  });

  http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!originAllowed(req, allowedOrigins) && !(web && fromOwnPage(req, listen.host, port))) {
      log.info({ origin: req.headers.origin }, 'upgrade refused: origin not allowed');
      rejectUpgrade(socket, 403, 'Forbidden');
      return;
    }
    if (!isAuthorized(req, opts.token)) {
      log.info({ remote: req.socket.remoteAddress }, 'upgrade refused: bad or missing token');
      rejectUpgrade(socket, 401, 'Unauthorized');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = new WsRpcConnection(ws, table, {
        log,
        onSent: (kind, bytes) => metrics.sent(kind, bytes),
        socket,
      });
      metrics.connectionOpened();
      metrics.track(conn);
      conn.onClose(() => metrics.connectionClosed());
      for (const ext of table.extensions) {
        try {
          ext.onConnection?.(conn);
        } catch (err) {
          log.warn({ err: (err as Error).message, ext: ext.name }, 'onConnection failed');
        }
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(listen.port, listen.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const port = (http.address() as AddressInfo).port;
  const hostForUrl = urlHost(listen.host);
  log.info({ host: listen.host, port }, 'relay service listening');

  let closing: Promise<void> | undefined;
  return {
    url: `ws://${hostForUrl}:${port}`,
    httpUrl: `http://${hostForUrl}:${port}`,
    port,
    ahp,
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
      })();
      return closing;
    },
  };
}
