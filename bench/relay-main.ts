/**
 * The bench's relay service in a process of its own (bundled to bench/out/relay.mjs), so the
 * "RelayClient over WebSocket" figures measure client → relay → SSH → stub the way they run in
 * use: relay and client on separate threads. Reads `{ token, hosts, daemonArgs }` as JSON from
 * argv[2], prints `{ url }` on stdout once listening, exits on SIGTERM or when stdin closes.
 */
import { startHeapTrimmer } from '../relay/core/heap-trim.js';
import { createLogger } from '../relay/core/log.js';
import { routerOver } from '../relay/service/host-router.js';
import { createPtyExtension } from '../relay/service/pty-extension.js';
import { startRelayServer } from '../relay/service/relay-server.js';
import { type SshHostConfig, SshPtyProvider } from '../relay/ssh/ssh-pty-provider.js';
import { TerminalRegistry } from '../relay/terminals/terminal-registry.js';

interface RelayProcessArgs {
  token: string;
  hosts: Record<string, SshHostConfig>;
  daemonArgs: string[];
}

async function run(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as RelayProcessArgs;
  // BENCH_RELAY_LOG=warn (or debug) shows the relay's own log on the bench's stderr.
  const log = createLogger({ level: process.env.BENCH_RELAY_LOG ?? 'silent', fd: 2 });
  // As relay/service/host-router.ts: the service acknowledges output for its consumers
  // (TerminalCredit), so the bench measures the credit path that runs in use.
  const provider = new SshPtyProvider({
    hosts: args.hosts,
    daemonArgs: args.daemonArgs,
    log,
    link: { manualAck: true },
  });
  const router = routerOver(Object.fromEntries(Object.keys(args.hosts).map((h) => [h, provider])));
  const registry = new TerminalRegistry();
  const server = await startRelayServer({
    listen: { host: '127.0.0.1', port: 0 },
    token: args.token,
    router,
    registry,
    extensions: [createPtyExtension({ router, registry, log })],
    log,
  });
  // As `ptyrelay serve` does (relay/cli/cmd-serve.ts).
  const trimmer = startHeapTrimmer(log);
  const stop = async () => {
    trimmer.stop();
    await server.close().catch(() => {});
    await provider.dispose().catch(() => {});
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.stdin.on('end', () => void stop());
  process.stdin.resume();
  process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
}

run().catch((err) => {
  process.stderr.write(`bench relay failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
