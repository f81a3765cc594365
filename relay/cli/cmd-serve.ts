import { homedir } from 'node:os';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import { startHeapTrimmer } from '../core/heap-trim.js';
import type { Logger } from '../core/log.js';
import { createLogger } from '../core/log.js';
import { defaultConfigPath, loadConfig, type RelayConfig } from '../service/config.js';
import { ConfigWatch, describeReload } from '../service/config-watch.js';
import { createHostKeyExtension } from '../service/host-key-extension.js';
import type { ConfigHostRouter } from '../service/host-router.js';
import { createPtyExtension } from '../service/pty-extension.js';
import { type RelayServer, startRelayServer } from '../service/relay-server.js';
import { loadOrCreateToken } from '../service/token.js';
import { TerminalRegistry } from '../terminals/terminal-registry.js';
import { TokenAuthority } from '../tokens/token-authority.js';
import { TokenStore } from '../tokens/token-store.js';
import type { Command, CommandArgs } from './command.js';
import { progress } from './relay-connect.js';
import { StartupLogBuffer } from './startup-log-buffer.js';

/** `HOST:PORT`, `[::1]:PORT` or `PORT`. */
export function parseListen(s: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(s) ?? /^()()(\d+)$/.exec(s);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new PtyRelayError('INVALID_ARGUMENT', `--listen wants HOST:PORT (e.g. 127.0.0.1:7681), got ${s}`);
  }
  return { host: m[1] || m[2] || '127.0.0.1', port };
}

const tilde = (p: string) => (p.startsWith(homedir()) ? `~${p.slice(homedir().length)}` : p);

const serve: Command = {
  usage: 'serve [--config FILE] [--listen HOST:PORT] [--tls-cert FILE --tls-key FILE] [--insecure-listen]',
  summary: 'Runs the relay: the WebSocket service with the built-in local host and the configured SSH hosts.',
  help: `  --config FILE      JSON config (default $PTYRELAY_CONFIG or ~/.config/ptyrelay/config.json)
  --listen HOST:PORT  overrides the config's listen address (port 0: any free port)
  --tls-cert FILE     serve https/wss with this PEM certificate (with --tls-key; or "tls" in the config)
  --tls-key FILE      its PEM private key (must not be readable by others)
  --insecure-listen   allow a listen address beyond loopback without TLS (refused otherwise)
The startup token (admin) is $PTYRELAY_TOKEN, else the file $PTYRELAY_TOKEN_FILE or
~/.config/ptyrelay/token (created on first run, mode 0600); \`ptyrelay token create\` makes scoped ones.
Logs are JSON lines (pino) on stdout; PTYRELAY_LOG_LEVEL sets the level. Stop with Ctrl-C.`,
  options: {
    config: { type: 'string' },
    listen: { type: 'string' },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
    'insecure-listen': { type: 'boolean' },
  },
  async run(args) {
    const configFile = args.values.config as string | undefined;
    const fromFile = loadConfig(configFile);
    const config = configFor(args, structuredClone(fromFile));
    // Log lines wait until the service is up: `--json`'s line comes first on stdout.
    const logOut = new StartupLogBuffer();
    const log = createLogger({ destination: logOut });
    const token = loadOrCreateToken();
    if (token.warning) {
      log.warn({ path: token.path }, token.warning);
      progress(`warning: ${token.warning}`);
    }
    const auth = new TokenAuthority({ startupToken: token.token, store: new TokenStore(), log });
    const relay = await startRelay(config, {
      log,
      auth,
      file: configFile ?? defaultConfigPath(),
      args,
    }).catch((err) => {
      logOut.release();
      auth.dispose();
      throw err;
    });
    printStarted(args, relay, token);
    logOut.release();
    const trimmer = startHeapTrimmer(log);
    // The terminals hosts already hold are published (web page, ls, AHP catalog) without waiting for a use.
    const adopt = () =>
      relay.router.adoptAll().then((hosts) => log.info({ hosts }, 'adopted the hosts that run this stub'));
    void adopt();
    const watcher = new ConfigWatch({
      file: relay.file,
      load: () => loadConfig(configFile),
      running: fromFile,
      applyHosts: async (hosts) => {
        const change = await relay.router.applyHosts(hosts);
        // What a removed host holds keeps running there; this relay no longer lists it.
        for (const r of relay.registry.list())
          if (change.removed.includes(r.host)) relay.registry.remove(r.id);
        void adopt();
        return change;
      },
      applyLsp: (lsp) => relay.router.lsp.update(lsp),
      log: log.child({ part: 'config' }),
      onOutcome: (o) => progress(describeReload(o)),
    });
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    if (!args.json) progress('stopping (terminals keep running in their daemons)');
    watcher.close();
    trimmer.stop();
    await relay.close();
    auth.dispose();
    return 0;
  },
};

/** The config with the command line's overrides (listen address, TLS files). */
function configFor(args: CommandArgs, config: RelayConfig): RelayConfig {
  if (args.values.listen) config.listen = parseListen(args.values.listen as string);
  const cert = args.values['tls-cert'] as string | undefined;
  const key = args.values['tls-key'] as string | undefined;
  if ((cert === undefined) !== (key === undefined))
    throw new PtyRelayError('INVALID_ARGUMENT', '--tls-cert and --tls-key go together');
  if (cert && key) config.tls = { cert, key };
  return config;
}

interface RunningRelay {
  file: string;
  router: ConfigHostRouter;
  registry: TerminalRegistry;
  server: RelayServer;
  close(): Promise<void>;
}

/** The router, the agent stack and the server, started; CONNECT_FAILED when it cannot listen. */
async function startRelay(
  config: RelayConfig,
  ctx: { log: Logger; auth: TokenAuthority; file: string; args: CommandArgs },
): Promise<RunningRelay> {
  const { log, auth } = ctx;
  // Loaded here: the SSH stack (ssh2) is only needed by the relay itself, not by client commands.
  const { createHostRouter } = await import('../service/host-router.js');
  const router = await createHostRouter(config, { log, configFile: ctx.file });
  const registry = new TerminalRegistry();
  const { createAgentStack } = await import('../agents/agent-stack.js');
  const agents = createAgentStack({
    router,
    registry,
    agents: config.agents,
    limits: config.limits,
    log: log.child({ ext: 'agents' }),
    auth,
    allowedOrigins: config.allowedOrigins,
  });
  const server = await startRelayServer({
    listen: config.listen,
    auth,
    ...(config.tls ? { tls: config.tls } : {}),
    insecureListen: ctx.args.values['insecure-listen'] === true,
    allowedOrigins: config.allowedOrigins,
    router,
    registry,
    extensions: [
      createHostKeyExtension(router),
      createPtyExtension({
        router,
        registry,
        log: log.child({ ext: 'ptyrelay' }),
        relayPendingCap: config.flowControl.relayPendingCap,
        clientBufferBytes: config.flowControl.highWatermark,
        limits: config.limits,
      }),
    ],
    log,
    limits: config.limits,
    flowControl: config.flowControl,
    httpRoutes: [agents.mcp.handle],
  }).catch(async (err) => {
    await router.dispose();
    if (isPtyRelayError(err)) throw err;
    throw new PtyRelayError(
      'CONNECT_FAILED',
      `cannot listen on ${config.listen.host}:${config.listen.port}: ${err.message}`,
    );
  });
  return {
    file: ctx.file,
    router,
    registry,
    server,
    async close() {
      await agents.mcp.close();
      // Agent terminals keep running; their daemons keep the owners and when they were last seen.
      await agents.service.dispose();
      await server.close();
      await router.dispose();
    },
  };
}

/** The first lines: where the relay listens, the web page and how to pass it the token. */
function printStarted(
  args: CommandArgs,
  relay: RunningRelay,
  token: ReturnType<typeof loadOrCreateToken>,
): void {
  const { server, router } = relay;
  const where =
    token.source === 'env'
      ? 'from $PTYRELAY_TOKEN'
      : `${tilde(token.path!)}${token.source === 'created' ? ' (created)' : ''}`;
  if (args.json) {
    const info = { url: server.url, httpUrl: server.httpUrl, port: server.port, hosts: router.hosts() };
    const web = server.webServed ? { webUrl: `${server.httpUrl}/` } : {};
    process.stdout.write(
      `${JSON.stringify({ ...info, ...web, token: { source: token.source, path: token.path } })}\n`,
    );
    return;
  }
  progress(`relay listening on ${server.url}  (health: ${server.httpUrl}/healthz)`);
  if (server.webServed) {
    const tokenFrom = token.source === 'env' ? '$PTYRELAY_TOKEN' : `$(cat ${tilde(token.path!)})`;
    progress(
      `web page: ${server.httpUrl}/  (it asks for the token; or open ${server.httpUrl}/#token=${tokenFrom})`,
    );
  }
  progress(`token: ${where}`);
  progress(`hosts: ${router.hosts().join(', ')}  (config: ${tilde(relay.file)}, re-read when it changes)`);
  progress(`agents: MCP at ${server.httpUrl}/mcp (bearer token), or \`ptyrelay mcp\` on stdio`);
  const env = server.port === 7681 ? '' : `PTYRELAY_URL=${server.url} `;
  progress(`try:   ${env}ptyrelay open local   then   ${env}ptyrelay attach <id>   (Ctrl-C stops the relay)`);
}

/** `serve`: the relay itself. */
export const serveCommands: Record<string, Command> = { serve };
