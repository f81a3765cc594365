import { readFileSync } from 'node:fs';
import type { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { PtyRelayError } from '../../provider/errors.js';
import { AGENT_HEADER, MCP_PATH } from '../agents/mcp-constants.js';
import { startHeapTrimmer } from '../core/heap-trim.js';
import { createLogger } from '../core/log.js';
import { loadConfig } from '../service/config.js';
import type { Command } from './command.js';
import { relayEnv } from './relay-connect.js';

/** The PEM file of `--ca`: the relay's certificate must chain to it (a self-signed one, itself). */
function readCa(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new PtyRelayError(
      'CONFIG_INVALID',
      `--ca: cannot read ${path}: ${(err as NodeJS.ErrnoException).code}`,
    );
  }
}

/** JSON-RPC error code for "the relay could not be reached" answered to the MCP client. */
const UPSTREAM_ERROR = -32000;

/** Resolves when the stdio transport closes (the MCP client went away). */
function closed(t: StdioServerTransport): Promise<void> {
  return new Promise((resolve) => {
    t.onclose = () => resolve();
    process.stdin.once('end', () => void t.close());
  });
}

/** `ws://h:p` → `http://h:p/mcp`. */
export function mcpUrlOf(relayUrl: string): URL {
  const u = new URL(relayUrl.replace(/^ws/, 'http'));
  u.pathname = MCP_PATH;
  return u;
}

/**
 * stdio ↔ the relay's /mcp: every JSON-RPC message is passed through unchanged, so the relay
 * holds the MCP session, the owner and its terminals; closing stdin ends the session (DELETE), and
 * the relay keeps the terminals for its owner grace period.
 */
async function bridge(agent: string | undefined, caFile: string | undefined): Promise<number> {
  // Loaded here: every other command starts faster without the MCP SDK.
  const { StreamableHTTPClientTransport } = await import(
    '@modelcontextprotocol/sdk/client/streamableHttp.js'
  );
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const env = relayEnv();
  const ca = caFile !== undefined ? readCa(caFile) : env.ca;
  // node:https loads only for a relay certificate of its own (`serve` imports this file too).
  const fetchCa = ca ? (await import('./trusting-fetch.js')).fetchTrusting(ca) : undefined;
  const upstream = new StreamableHTTPClientTransport(mcpUrlOf(env.url), {
    ...(fetchCa ? { fetch: fetchCa } : {}),
    requestInit: {
      headers: { authorization: `Bearer ${env.token}`, ...(agent ? { [AGENT_HEADER]: agent } : {}) },
    },
  });
  const stdio = new StdioServerTransport();
  const done = closed(stdio);
  upstream.onmessage = (m: JSONRPCMessage) => {
    const r = m as { result?: { protocolVersion?: unknown } };
    if (typeof r.result?.protocolVersion === 'string') upstream.setProtocolVersion(r.result.protocolVersion);
    void stdio.send(m);
  };
  upstream.onerror = (err) => process.stderr.write(`ptyrelay mcp: relay: ${err.message}\n`);
  stdio.onmessage = (m: JSONRPCMessage) => {
    upstream.send(m).catch((err: Error) => {
      const id = (m as { id?: string | number }).id;
      if (id !== undefined) {
        void stdio.send({
          jsonrpc: '2.0',
          id,
          error: { code: UPSTREAM_ERROR, message: `relay: ${err.message}` },
        });
      } else process.stderr.write(`ptyrelay mcp: relay: ${err.message}\n`);
    });
  };
  await upstream.start();
  await stdio.start();
  await done;
  // Ends the relay-side session so its owner's grace starts now; a relay already gone needs nothing.
  await upstream
    .terminateSession()
    .catch((err: Error) => process.stderr.write(`ptyrelay mcp: ${err.message}\n`));
  await upstream.close();
  return 0;
}

/** The relay in this process: the local host plus the configured ones, MCP on stdio. */
async function embedded(configPath: string | undefined, agent: string | undefined): Promise<number> {
  const config = loadConfig(configPath);
  const log = createLogger({ fd: 2 });
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const { createAgentService, packageVersion } = await import('../agents/agent-stack.js');
  const { createTerminalMcpServer } = await import('../agents/mcp-tools.js');
  const { createHostRouter } = await import('../service/host-router.js');
  const router = await createHostRouter(config, { log });
  const service = createAgentService({ router, agents: config.agents, log: log.child({ ext: 'agents' }) });
  const owner = service.owner(agent ? `agent:${agent}` : `stdio:${process.pid}`);
  void router.adoptAll();
  const trimmer = startHeapTrimmer(log);
  const server = createTerminalMcpServer(service, owner, packageVersion());
  const stdio = new StdioServerTransport();
  const done = closed(stdio);
  await server.connect(stdio);
  await done;
  // Without an agent name nobody can reach this process's terminals once it ends: close them.
  // With one, they stay for the owner's grace: a later `ptyrelay mcp --agent NAME` adopts them.
  trimmer.stop();
  await service.dispose({ close: agent === undefined });
  await router.dispose();
  return 0;
}

const mcp: Command = {
  usage: 'mcp [--embedded] [--config FILE] [--agent NAME] [--ca FILE]',
  summary: 'Serves the agent terminal tools over MCP on stdio (terminal_open/send/read/signal/list/close).',
  help: `  By default talks to the running relay ($PTYRELAY_URL, token) through its /mcp endpoint; the
  relay owns the terminals and keeps them for agents.ownerGraceMs after this process ends.
  --embedded     run the relay in this process instead (the local host plus the configured hosts)
  --config FILE  config for --embedded (default $PTYRELAY_CONFIG or ~/.config/ptyrelay/config.json)
  --agent NAME   owner name: a later \`ptyrelay mcp --agent NAME\` finds the terminals again
                 (within the grace period)
  --ca FILE      trust this PEM certificate for a wss:// relay (a self-signed one; default $PTYRELAY_CA)
See docs/agents.md for a client configuration.`,
  options: {
    embedded: { type: 'boolean' },
    config: { type: 'string' },
    agent: { type: 'string' },
    ca: { type: 'string' },
  },
  run: (args) => {
    const agent = args.values.agent as string | undefined;
    return args.values.embedded
      ? embedded(args.values.config as string | undefined, agent)
      : bridge(agent, args.values.ca as string | undefined);
  },
};

export const mcpCommands: Record<string, Command> = { mcp };
