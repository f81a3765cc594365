import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../core/log.js';
import type { HostRouter } from '../core/rpc-types.js';
import { checkTerminalQuota, type TerminalQuota } from '../terminals/terminal-quota.js';
import type { TerminalClaim, TerminalRegistry } from '../terminals/terminal-registry.js';
import type { TokenAuthority } from '../tokens/token-authority.js';
import type { AgentsConfig } from './agent-config.js';
import { createMcpHttpRoute, type McpHttpRoute } from './mcp-http.js';
import { TerminalToolService } from './terminal-tool-service.js';

/** The package version, for the MCP server's implementation info (package.json above this file). */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file))
      return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? '0.0.0';
    dir = dirname(dir);
  }
  return '0.0.0';
}

export interface AgentStackOptions {
  router: HostRouter;
  agents?: Partial<AgentsConfig>;
  log?: Logger;
  /** When given, agent terminals are listed in the relay's catalog, claimed by their MCP owner. */
  registry?: TerminalRegistry;
  /** The relay's terminal limits, checked against the registry before an MCP `terminal_open`. */
  limits?: TerminalQuota;
}

/** The terminal tool service over the relay's hosts; agent terminals show in the catalog. */
export function createAgentService(o: AgentStackOptions): TerminalToolService {
  return new TerminalToolService({
    hosts: o.router,
    ownerGraceMs: o.agents?.ownerGraceMs,
    defaultTimeoutMs: o.agents?.defaultTimeoutMs,
    log: o.log,
    onPublished: (t, owner, r) => {
      if (!o.registry) return;
      const claim: TerminalClaim = { kind: 'session', session: owner.key };
      const known = o.registry.find(t.providerId);
      // Published from its host before this service adopted it: the owner's claim.
      if (known?.claim.kind === 'none') o.registry.update(t.providerId, { claim });
      if (known) return;
      o.registry.add({
        id: t.providerId,
        host: t.host,
        claim,
        title: r.title ?? t.name ?? t.id,
        ...(t.name ? { name: t.name } : {}),
        ...(r.cwd ? { cwd: r.cwd } : {}),
        cols: r.cols,
        rows: r.rows,
        incarnationId: r.incarnationId,
        createdAt: t.createdAt,
      });
    },
    onRemoved: (t) => o.registry?.remove(t.providerId),
    beforeSpawn: (host, owner) => {
      if (o.registry && o.limits) checkTerminalQuota(o.registry, o.limits, host, `session:${owner.key}`);
    },
  });
}

/** The service plus its MCP endpoint at /mcp (behind `token`). */
export function createAgentStack(
  o: AgentStackOptions & { token?: string; auth?: TokenAuthority; allowedOrigins?: string[] },
): {
  service: TerminalToolService;
  mcp: McpHttpRoute;
  close(): Promise<void>;
} {
  const service = createAgentService(o);
  const mcp = createMcpHttpRoute({
    service,
    ...(o.auth ? { auth: o.auth } : { token: o.token }),
    allowedOrigins: o.allowedOrigins,
    version: packageVersion(),
    log: o.log,
  });
  return {
    service,
    mcp,
    async close() {
      await mcp.close();
      await service.dispose();
    },
  };
}
