import { randomBytes } from 'node:crypto';
import { RelayClient } from '../../provider/client/relay-client.js';
import type { IPtyProvider } from '../../provider/contract.js';
import { createLogger } from '../../relay/log.js';
import { createPtyExtension } from '../../relay/service/pty-extension.js';
import { startRelayServer } from '../../relay/service/relay-server.js';
import type { HostRouter } from '../../relay/service/rpc-types.js';
import { TerminalRegistry } from '../../relay/service/terminal-registry.js';

/**
 * A relay service on 127.0.0.1 routing host `h` to the bench's SshPtyProvider, and a RelayClient
 * connected to it: the whole client → WebSocket → relay → SSH → stub path.
 */
export async function startBenchRelay(
  provider: IPtyProvider,
): Promise<{ client: RelayClient; close(): Promise<void> }> {
  const token = randomBytes(16).toString('hex');
  const router: HostRouter = { hosts: () => ['h'], providerFor: () => provider, providers: () => [provider] };
  const registry = new TerminalRegistry();
  const log = createLogger({ level: 'silent' });
  const server = await startRelayServer({
    listen: { host: '127.0.0.1', port: 0 },
    token,
    router,
    registry,
    extensions: [createPtyExtension({ router, registry, log })],
    log,
  });
  const client = new RelayClient({ url: server.url, token });
  return {
    client,
    async close() {
      await client.dispose();
      await server.close();
    },
  };
}
