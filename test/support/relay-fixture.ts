import { RelayClient, type RelayClientOptions } from '../../provider/client/relay-client.js';
import type { HostRouter } from '../../relay/core/rpc-types.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { type RelayLimits, validateConfig } from '../../relay/service/config.js';
import { createHostKeyExtension } from '../../relay/service/host-key-extension.js';
import { createHostRouter, routerOver } from '../../relay/service/host-router.js';
import { createPtyExtension } from '../../relay/service/pty-extension.js';
import {
  type RelayServer,
  type RelayServerOptions,
  startRelayServer,
} from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import { type LocalFixture, startLocal } from './local-daemon.js';

/** The bearer token of fixture relays. */
export const TEST_TOKEN = 'relay-fixture-token-0123456789abcdef';

/** A real relay server (ephemeral port) with the ptyrelay extension over a tmp local daemon. */
export interface RelayFixture {
  local: LocalFixture;
  server: RelayServer;
  registry: TerminalRegistry;
  router: HostRouter & { dispose(): Promise<void> };
  url: string;
  port: number;
  /** A RelayClient against `url` (or another, e.g. a FaultProxy); disposed by cleanup(). */
  client(opts?: Partial<RelayClientOptions>): RelayClient;
  /** Closes the server and its router, then starts new ones on the same port and daemon. */
  restart(opts?: { downMs?: number }): Promise<void>;
  /**
   * Another relay process's worth (its own server, router and registry on another port) over the
   * same daemon, as a fleet's second relay; closed by cleanup().
   */
  sibling(): Promise<{
    url: string;
    registry: TerminalRegistry;
    client(opts?: Partial<RelayClientOptions>): RelayClient;
  }>;
  cleanup(): Promise<void>;
}

/**
 * A HostRouter serving only `local` with credit flow control left to the consumer (manualAck),
 * so the ptyrelay extension's acknowledgements decide when the stub pauses a PTY.
 */
function manualAckRouter(runtimeDir: string): RelayFixture['router'] {
  const local = new LocalPtyProvider({ runtimeDir, link: { manualAck: true } });
  return { ...routerOver({ local }), dispose: () => local.dispose() };
}

/**
 * Starts the fixture; `manualAck` swaps the service's router for {@link manualAckRouter}, `config`
 * is a relay config (e.g. with SSH hosts) for the real router.
 */
export async function startRelay(
  opts: {
    manualAck?: boolean;
    config?: unknown;
    /** Further server options (the web page's root, allowed Origins). */
    server?: Partial<Pick<RelayServerOptions, 'web' | 'allowedOrigins'>>;
    /** Relay limits (the server's and the ptyrelay extension's). */
    limits?: Partial<RelayLimits>;
  } = {},
): Promise<RelayFixture> {
  const local = await startLocal();
  const clients: RelayClient[] = [];
  const boot = async (port: number) => {
    const router = opts.manualAck
      ? manualAckRouter(local.runtimeDir)
      : await createHostRouter(validateConfig(opts.config ?? {}), { localRuntimeDir: local.runtimeDir });
    const registry = new TerminalRegistry();
    const server = await startRelayServer({
      listen: { host: '127.0.0.1', port },
      token: TEST_TOKEN,
      router,
      registry,
      extensions: [
        createHostKeyExtension(router),
        createPtyExtension({ router, registry, ...(opts.limits ? { limits: opts.limits } : {}) }),
      ],
      ...(opts.limits ? { limits: opts.limits } : {}),
      ...opts.server,
    });
    return { router, registry, server };
  };
  let cur = await boot(0);
  const siblings: Awaited<ReturnType<typeof boot>>[] = [];
  const fx: RelayFixture = {
    local,
    server: cur.server,
    registry: cur.registry,
    router: cur.router,
    url: cur.server.url,
    port: cur.server.port,
    client(opts = {}) {
      const c = new RelayClient({ url: fx.url, token: TEST_TOKEN, ...opts });
      clients.push(c);
      return c;
    },
    async restart({ downMs = 300 } = {}) {
      await cur.server.close();
      await cur.router.dispose();
      await new Promise((r) => setTimeout(r, downMs));
      cur = await boot(fx.port);
      fx.server = cur.server;
      fx.registry = cur.registry;
      fx.router = cur.router;
    },
    async sibling() {
      const other = await boot(0);
      siblings.push(other);
      return {
        url: other.server.url,
        registry: other.registry,
        client(opts = {}) {
          const c = new RelayClient({ url: other.server.url, token: TEST_TOKEN, ...opts });
          clients.push(c);
          return c;
        },
      };
    },
    async cleanup() {
      for (const c of clients) await c.dispose();
      for (const s of [cur, ...siblings]) {
        await s.server.close();
        await s.router.dispose();
      }
      await local.cleanup();
    },
  };
  return fx;
}
