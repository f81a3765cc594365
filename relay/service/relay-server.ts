import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AhpExtension, createAhpExtension } from '../ahp/ahp-extension.js';
import { assertListenAllowed, loadTlsFiles, type TlsFiles } from '../core/listen-policy.js';
import { createLogger, type Logger } from '../core/log.js';
import { http as nodeHttp } from '../core/node-http.js';
import type { HostRouter, RpcExtension } from '../core/rpc-types.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import { TokenAuthority } from '../tokens/token-authority.js';
import { createTokenExtension } from '../tokens/token-extension.js';
import { createOverviewExtension } from '../web/overview-extension.js';
import { fromOwnPage } from '../web/page-origin.js';
import { defaultWebRoot, WebAssets } from '../web/web-assets.js';
import { DEFAULT_FLOW_CONTROL, DEFAULT_LIMITS, type FlowControlConfig, type RelayLimits } from './config.js';
import { RelayMetrics } from './metrics.js';
import { RelayConnections } from './relay-connections.js';
import { type HttpRoute, RelayHttpRoutes } from './relay-http.js';
import { RpcDispatchTable } from './rpc-connection.js';

export { CLOSE_TOKEN_ENDED } from './relay-connections.js';
export type { HttpRoute } from './relay-http.js';

/** Default listen address (loopback only). */
export const DEFAULT_LISTEN_HOST = '127.0.0.1';
export const DEFAULT_LISTEN_PORT = 7681;

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

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Starts the relay service: an HTTP server (`/healthz`, `/metrics`) and a WebSocket server on
 * the same port speaking JSON-RPC 2.0. Upgrades need the token (`Authorization: Bearer` or a
 * `ptyrelay.token.<t>` subprotocol) and an allowed Origin, else 401/403 before the upgrade.
 * Requests are answered by RelayHttpRoutes (relay-http.ts), upgrades and connections by
 * RelayConnections (relay-connections.ts).
 */
export async function startRelayServer(opts: RelayServerOptions): Promise<RelayServer> {
  if (!opts.auth && !opts.token) throw new Error('startRelayServer needs a token');
  const log = opts.log ?? createLogger({ name: 'ptyrelay-server' });
  const listen = opts.listen ?? { host: DEFAULT_LISTEN_HOST, port: DEFAULT_LISTEN_PORT };
  assertListenAllowed(listen.host, opts.tls !== undefined, opts.insecureListen === true);
  const tls = opts.tls ? loadTlsFiles(opts.tls) : undefined;
  const ownAuth = opts.auth === undefined;
  const auth = opts.auth ?? new TokenAuthority({ startupToken: opts.token!, log });
  const limits = { ...DEFAULT_LIMITS, ...opts.limits };
  const metrics = new RelayMetrics(opts.router, opts.registry);
  const { ahp, overview, table } = relayExtensions(opts, auth, log, limits);
  const web = webAssets(opts, log);

  const routes = new RelayHttpRoutes({ auth, metrics, web, routes: opts.httpRoutes ?? [] });
  const http: Server = tls
    ? // node:https (and tls) load only for a relay that serves TLS.
      (await import('node:https')).createServer({ cert: tls.cert, key: tls.key }, routes.onRequest)
    : nodeHttp.createServer(routes.onRequest);
  const scheme = tls ? 'https' : 'http';
  /** Known once listening (no upgrade comes before). */
  let port = 0;
  const conns = new RelayConnections({
    table,
    auth,
    metrics,
    log,
    limits,
    allowedOrigins: opts.allowedOrigins ?? [],
    ownPage: (req: IncomingMessage) => web !== undefined && fromOwnPage(req, listen.host, port, scheme),
  });
  http.on('upgrade', conns.upgrade);

  port = await listenOn(http, listen);
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
        await conns.close();
        await new Promise<void>((resolve) => {
          http.close(() => resolve());
          http.closeAllConnections();
        });
        ahp.dispose();
        overview.dispose();
        metrics.dispose();
        conns.dispose();
        if (ownAuth) auth.dispose();
        else auth.audit.flush();
      })();
      return closing;
    },
  };
}

/** The extensions in dispatch order: AHP first, the given ones, the overview feed, the token API. */
function relayExtensions(opts: RelayServerOptions, auth: TokenAuthority, log: Logger, limits: RelayLimits) {
  const flow = { ...DEFAULT_FLOW_CONTROL, ...opts.flowControl };
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
  return { ahp, overview, table };
}

/** The web page's files, unless turned off or not built. */
function webAssets(opts: RelayServerOptions, log: Logger): WebAssets | undefined {
  const webRoot = opts.web === false ? undefined : (opts.web?.root ?? defaultWebRoot());
  const web = webRoot ? new WebAssets(webRoot) : undefined;
  if (!web && opts.web !== false) log.info('web page not built (npm run build); serving the API only');
  return web;
}

/** Listens at `listen`; the port it got. */
async function listenOn(http: Server, listen: { host: string; port: number }): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(listen.port, listen.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  return (http.address() as AddressInfo).port;
}
