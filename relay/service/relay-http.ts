/**
 * The relay's plain HTTP requests (everything but the WebSocket upgrade): the extra routes first
 * (e.g. MCP at /mcp), then `/healthz`, `/metrics`, the web page's files, else 404.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { presentedToken } from '../core/auth.js';
import { canSeeHost, type Grant } from '../core/grant.js';
import type { TokenAuthority } from '../tokens/token-authority.js';
import type { WebAssets } from '../web/web-assets.js';
import type { RelayMetrics } from './metrics.js';

/** An extra HTTP route of the relay (e.g. MCP at /mcp). */
export type HttpRoute = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

function unauthorized(res: ServerResponse): void {
  res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain' });
  res.end('unauthorized\n');
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(text);
}

/** Answers the HTTP requests of the relay's server. */
export class RelayHttpRoutes {
  constructor(
    private readonly deps: {
      auth: TokenAuthority;
      metrics: RelayMetrics;
      /** The web page's files, when built. */
      web?: WebAssets;
      /** Tried first, in order; each answers (true) or passes (false). */
      routes: HttpRoute[];
    },
  ) {}

  /** The server's request listener. */
  readonly onRequest = (req: IncomingMessage, res: ServerResponse): void => void this.handle(req, res);

  private grantOf(req: IncomingMessage): Grant | undefined {
    return this.deps.auth.authenticate(presentedToken(req));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://relay').pathname;
    for (const route of this.deps.routes) if (await route(req, res)) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendJson(res, 405, { error: 'method not allowed' });
      return;
    }
    if (path === '/healthz') {
      this.healthz(req, res);
      return;
    }
    if (path === '/metrics') {
      await this.metrics(req, res);
      return;
    }
    if (this.deps.web?.handle(path, req, res)) return;
    sendJson(res, 404, { error: 'not found' });
  }

  /**
   * Without a token: only that the relay runs (host names say where it reaches). A token that
   * does not authenticate gets 401, so the web page can tell a wrong token from a down relay.
   */
  private healthz(req: IncomingMessage, res: ServerResponse): void {
    const grant = this.grantOf(req);
    if (!grant && presentedToken(req) !== undefined) unauthorized(res);
    else if (!grant) sendJson(res, 200, { ok: true });
    else {
      const hosts = Object.fromEntries(
        Object.entries(this.deps.metrics.linkStates()).filter(([h]) => canSeeHost(grant, h)),
      );
      sendJson(res, 200, { ok: true, hosts });
    }
  }

  /** Prometheus text, for the admin token only. */
  private async metrics(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.grantOf(req)?.scope !== 'admin') {
      unauthorized(res);
      return;
    }
    const { metrics } = this.deps;
    try {
      const { text, contentType } = await metrics.exposed();
      res.writeHead(200, { 'content-type': contentType });
      res.end(text);
    } catch (err) {
      sendJson(res, 500, { error: (err as Error).message });
    }
  }
}
