import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgentStack } from '../../relay/agents/agent-stack.js';
import type { TokenScope } from '../../relay/core/grant.js';
import { validateConfig } from '../../relay/service/config.js';
import { createHostKeyExtension } from '../../relay/service/host-key-extension.js';
import { createHostRouter } from '../../relay/service/host-router.js';
import { createPtyExtension } from '../../relay/service/pty-extension.js';
import { type RelayServer, startRelayServer } from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import { TokenAuthority } from '../../relay/tokens/token-authority.js';
import { TokenStore } from '../../relay/tokens/token-store.js';
import { capturedLog } from './captured-log.js';
import { type LocalFixture, startLocal } from './local-daemon.js';
import { open, type TestClient } from './relay-test-support.js';

/** The startup token of scoped-relay fixtures (admin). */
export const STARTUP_TOKEN = 'scoped-relay-startup-token-0123456789abcdef';
/** Every connection of the fixture claims as this client, so only scopes decide what is refused. */
export const OWNER = 'owner';

/**
 * The tokens of the fixture, by name: what each may do is the subject of the tests.
 * `b` is a configured SSH host that is never reached (nothing listens on its port).
 */
export const TOKEN_SPECS = {
  viewer: { scope: 'read' },
  builder: { scope: 'write' },
  localdev: { scope: 'write', hosts: ['local'] },
  bview: { scope: 'read', hosts: ['b'] },
  ops: { scope: 'admin' },
} as const satisfies Record<string, { scope: TokenScope; hosts?: string[] }>;

export interface ScopedRelay {
  server: RelayServer;
  auth: TokenAuthority;
  store: TokenStore;
  /** PTYRELAY_STATE_DIR of the store (for the real CLI). */
  stateDir: string;
  registry: TerminalRegistry;
  local: LocalFixture;
  mcpUrl: URL;
  log: ReturnType<typeof capturedLog>;
  /** Token values by name (TOKEN_SPECS, plus what tests add with `mint`). */
  tokens: Record<string, string>;
  mint(name: string, o: { scope: TokenScope; hosts?: string[]; terminal?: string; ttlMs?: number }): string;
  /** A WebSocket client with `token` that said hello as OWNER (its own instance). */
  client(token: string): Promise<TestClient>;
  /** A WebSocket client with `token` that opened the AHP channel as OWNER; the initialize result too. */
  // biome-ignore lint/suspicious/noExplicitAny: the initialize result is untyped JSON the tests assert on.
  ahp(token: string, initialSubscriptions?: string[]): Promise<{ c: TestClient; init: any }>;
  cleanup(): Promise<void>;
}

export async function startScopedRelay(): Promise<ScopedRelay> {
  const root = mkdtempSync(join(tmpdir(), 'ptr-scoped-'));
  const stateDir = join(root, 'state');
  const log = capturedLog();
  const local = await startLocal(['--agent-idle-ms', '20000']);
  const config = validateConfig({ hosts: { b: { host: '127.0.0.1', port: 9, hostKeyPolicy: 'strict' } } });
  const router = await createHostRouter(config, { localRuntimeDir: local.runtimeDir });
  const registry = new TerminalRegistry();
  const store = new TokenStore(join(stateDir, 'tokens'));
  const auth = new TokenAuthority({ startupToken: STARTUP_TOKEN, store, log: log.log });
  const agents = createAgentStack({ router, registry, log: log.log, auth });
  const server = await startRelayServer({
    listen: { host: '127.0.0.1', port: 0 },
    auth,
    router,
    registry,
    log: log.log,
    extensions: [createHostKeyExtension(router), createPtyExtension({ router, registry, log: log.log })],
    httpRoutes: [agents.mcp.handle],
  });
  const clients: TestClient[] = [];
  const tokens: Record<string, string> = {};
  const fx: ScopedRelay = {
    server,
    auth,
    store,
    stateDir,
    registry,
    local,
    mcpUrl: new URL(`${server.httpUrl}/mcp`),
    log,
    tokens,
    mint(name, o) {
      tokens[name] = store.create({ name, ...o }).token;
      return tokens[name];
    },
    async client(token) {
      const c = await open(server.url, { token });
      clients.push(c);
      await c.request('ptyrelay/hello', { clientId: OWNER, instanceId: randomUUID() });
      return c;
    },
    async ahp(token, initialSubscriptions = []) {
      const c = await open(server.url, { token });
      clients.push(c);
      const init = await c.request('initialize', {
        protocolVersions: ['0.1.0'],
        clientId: OWNER,
        initialSubscriptions,
      });
      return { c, init };
    },
    async cleanup() {
      for (const c of clients) c.close();
      await agents.close();
      await server.close();
      await router.dispose();
      auth.dispose();
      await local.cleanup();
      rmSync(root, { recursive: true, force: true });
    },
  };
  for (const [name, spec] of Object.entries(TOKEN_SPECS)) fx.mint(name, spec as { scope: TokenScope });
  return fx;
}
