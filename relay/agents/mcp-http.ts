import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { originAllowed, presentedToken } from '../core/auth.js';
import type { Grant } from '../core/grant.js';
import type { Logger } from '../core/log.js';
import { TokenAuthority } from '../tokens/token-authority.js';
import type { AgentOwner } from './agent-owner.js';
import { AGENT_HEADER, MCP_PATH } from './mcp-constants.js';
import type { TerminalToolService } from './terminal-tool-service.js';

/** Largest JSON-RPC body accepted (a send's text is at most 1 MiB). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/**
 * A session that made no request for this long is closed (its owner enters the grace period):
 * Streamable HTTP has no liveness of its own, and a client that exits without DELETE would
 * otherwise hold its session forever. Long sends keep a session busy, not idle.
 */
const SESSION_IDLE_MS = 60 * 60 * 1000;
const IDLE_SWEEP_MS = 60 * 1000;

export interface McpHttpOptions {
  service: TerminalToolService;
  /** The startup token alone (ignored when `auth` is given). */
  token?: string;
  /** Startup and scoped tokens: every request is checked, and a session belongs to its token. */
  auth?: TokenAuthority;
  allowedOrigins?: string[];
  version: string;
  log?: Logger;
}

/**
 * The MCP SDK and the tools, loaded on the first request to /mcp: most relays never serve one,
 * and the SDK (with its schemas) is several megabytes of an idle relay's memory.
 */
let mcpModules:
  | Promise<{
      Transport: typeof StreamableHTTPServerTransport;
      isInitializeRequest: (body: unknown) => boolean;
      createTerminalMcpServer: typeof import('./mcp-tools.js').createTerminalMcpServer;
    }>
  | undefined;
function loadMcp() {
  mcpModules ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('./mcp-tools.js'),
  ]).then(([http, types, tools]) => ({
    Transport: http.StreamableHTTPServerTransport,
    isInitializeRequest: types.isInitializeRequest,
    createTerminalMcpServer: tools.createTerminalMcpServer,
  }));
  return mcpModules;
}

interface McpSession {
  transport: StreamableHTTPServerTransport;
  owner: AgentOwner;
  /** The token that opened it: only that token may use it. */
  tokenId: string;
  lastSeen: number;
  inFlight: number;
}

function plain(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'text/plain', ...headers });
  res.end(`${body}\n`);
}

function rpcError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error(`body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(c as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/**
 * MCP over Streamable HTTP at `/mcp`, behind the relay's bearer token (401 without it): one MCP
 * server and one owner per session; a session that ends (DELETE, or the service closing it)
 * releases its owner, whose terminals then live for the grace period.
 */
export function createMcpHttpRoute(o: McpHttpOptions): McpHttpRoute {
  if (!o.auth && !o.token) throw new Error('createMcpHttpRoute needs a token');
  return new McpHttpRoute(o);
}

/** The `/mcp` route (see createMcpHttpRoute): its sessions, their idle sweep and token checks. */
export class McpHttpRoute {
  private readonly ownAuth: boolean;
  private readonly auth: TokenAuthority;
  private readonly sessions = new Map<string, McpSession>();
  private readonly offEnded: () => void;
  private readonly sweep: NodeJS.Timeout;

  constructor(private readonly o: McpHttpOptions) {
    this.ownAuth = o.auth === undefined;
    this.auth = o.auth ?? new TokenAuthority({ startupToken: o.token!, ...(o.log ? { log: o.log } : {}) });
    // A revoked or expired token's sessions end (their open streams with them).
    this.offEnded = this.auth.onEnded((ids) => {
      for (const s of this.sessions.values()) if (ids.has(s.tokenId)) void s.transport.close();
    });
    this.sweep = setInterval(() => {
      const now = Date.now();
      for (const s of this.sessions.values()) {
        if (s.inFlight === 0 && now - s.lastSeen > SESSION_IDLE_MS) void s.transport.close();
      }
    }, IDLE_SWEEP_MS);
    this.sweep.unref();
  }

  /** Serves a request to `/mcp` (true) or leaves it to the next route (false). Bound: routes are passed as functions. */
  readonly handle = async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const path = new URL(req.url ?? '/', 'http://relay').pathname;
    if (path !== MCP_PATH) return false;
    if (!originAllowed(req, this.o.allowedOrigins ?? [])) {
      plain(res, 403, 'forbidden');
      return true;
    }
    const grant = this.auth.authenticate(presentedToken(req));
    if (!grant) {
      plain(res, 401, 'unauthorized', { 'www-authenticate': 'Bearer' });
      return true;
    }
    const sid = req.headers['mcp-session-id'] as string | undefined;
    const known = sid ? this.sessions.get(sid) : undefined;
    if (known && known.tokenId !== grant.tokenId) {
      plain(res, 403, 'this MCP session belongs to another token');
      return true;
    }
    try {
      await this.route(req, res, grant, sid, known);
    } catch (err) {
      this.o.log?.warn({ err: (err as Error).message }, 'MCP request failed');
      if (!res.headersSent) rpcError(res, 400, (err as Error).message);
      else res.end();
    }
    return true;
  };

  /** Ends every MCP session (their owners enter the grace period). */
  async close(): Promise<void> {
    clearInterval(this.sweep);
    this.offEnded();
    if (this.ownAuth) this.auth.dispose();
    await Promise.allSettled([...this.sessions.values()].map((s) => s.transport.close()));
    this.sessions.clear();
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** An authorized request: to its session, to a new one (initialize), or refused. */
  private async route(
    req: IncomingMessage,
    res: ServerResponse,
    grant: Grant,
    sid: string | undefined,
    known: McpSession | undefined,
  ): Promise<void> {
    if (req.method === 'POST') {
      const body = await readJson(req);
      if (known) await this.forward(known, req, res, body);
      else if (!sid && (await loadMcp()).isInitializeRequest(body)) await this.open(req, res, body, grant);
      else rpcError(res, sid ? 404 : 400, sid ? 'unknown MCP session' : 'initialize first');
      return;
    }
    if (!known) rpcError(res, sid ? 404 : 400, sid ? 'unknown MCP session' : 'mcp-session-id required');
    else await this.forward(known, req, res);
  }

  /** Passes a request to a known session, keeping its idle clock. */
  private async forward(
    s: McpSession,
    req: IncomingMessage,
    res: ServerResponse,
    body?: unknown,
  ): Promise<void> {
    s.inFlight++;
    s.lastSeen = Date.now();
    try {
      await s.transport.handleRequest(req, res, body);
    } finally {
      s.inFlight--;
      s.lastSeen = Date.now();
    }
  }

  private async open(req: IncomingMessage, res: ServerResponse, body: unknown, grant: Grant): Promise<void> {
    const { o, sessions } = this;
    const url = new URL(req.url ?? '/', 'http://relay');
    const named =
      (req.headers[AGENT_HEADER] as string | undefined) ?? url.searchParams.get('agent') ?? undefined;
    const owner = o.service.owner(named ? `agent:${named}` : `mcp:${randomUUID()}`);
    const mcp = await loadMcp();
    const server = mcp.createTerminalMcpServer(o.service, owner, o.version, {
      grant,
      audit: this.auth.audit,
    });
    const transport: StreamableHTTPServerTransport = new mcp.Transport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, owner, tokenId: grant.tokenId, lastSeen: Date.now(), inFlight: 0 });
        o.log?.info(
          { session: id, owner: owner.key, tokenName: grant.name, scope: grant.scope },
          'MCP session opened',
        );
      },
    });
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id && sessions.get(id)?.transport === transport) sessions.delete(id);
      o.service.release(owner);
      o.log?.info({ session: id, owner: owner.key }, 'MCP session closed');
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }
}
