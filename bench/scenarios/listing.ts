import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { RelayClient } from '../../provider/client/relay-client.js';
import { validateConfig } from '../../relay/service/config.js';
import { ConfigHostRouter } from '../../relay/service/host-router.js';
import { createPtyExtension } from '../../relay/service/pty-extension.js';
import { startRelayServer } from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import type { BenchEnv } from '../lib/env.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { now, round, summarize } from '../lib/util.js';

const LISTINGS = 10;
const TARGET_MS = 2000;
const TOKEN = 'bench-listing-token-0123456789abcdef';

/** A TCP port that accepts connections and never says a word (a host whose sshd hangs). */
async function silentPort(): Promise<{ server: Server; port: number; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port, sockets };
}

/** A port nothing listens on (a host whose sshd is down). */
async function closedPort(): Promise<number> {
  const { server, port } = await silentPort();
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/**
 * How long `ptyrelay/list` takes while hosts are down: a relay with `local`, a host that refuses
 * (sshd down) and one that accepts and never answers (a hung sshd). Every listing must answer
 * within 2 s with the local terminals, naming both hosts.
 */
export async function listingScenario(env: BenchEnv): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  const silent = await silentPort();
  const host = (port: number) => ({
    host: '127.0.0.1',
    port,
    user: env.sshd.user,
    identityFile: env.sshd.userKeyPath,
    knownHostsFile: env.sshd.knownHostsFile,
    useAgent: false,
  });
  const config = validateConfig({ hosts: { down: host(await closedPort()), hung: host(silent.port) } });
  const router = await new ConfigHostRouter(config, {
    localRuntimeDir: join(env.localRoot, 'listing'),
  }).start();
  const registry = new TerminalRegistry();
  const server = await startRelayServer({
    listen: { host: '127.0.0.1', port: 0 },
    token: TOKEN,
    router,
    registry,
    extensions: [createPtyExtension({ router, registry })],
  });
  const client = new RelayClient({ url: server.url, token: TOKEN });
  const lat: number[] = [];
  let named = true;
  try {
    const opened = await client.spawn({ host: 'local', cols: 80, rows: 24, command: 'sleep', args: ['60'] });
    for (let i = 0; i < LISTINGS; i++) {
      const t = now();
      const l = await client.listing();
      lat.push(now() - t);
      const left = l.unavailable.map((u) => u.host).sort();
      if (!l.terminals.some((x) => x.id === opened.id) || left.join() !== 'down,hung') named = false;
    }
    await client.shutdown(opened.id, { immediate: true }).catch(() => {});
  } catch (err) {
    errors.push((err as Error).message);
  } finally {
    await client.dispose();
    await server.close();
    await (router.providerFor('local') as { shutdownDaemon?: () => Promise<void> })
      .shutdownDaemon?.()
      .catch(() => {});
    await router.dispose();
    for (const s of silent.sockets) s.destroy();
    silent.server.close();
  }
  if (!named) errors.push('a listing lacked the local terminal or did not name both hosts');
  const s = summarize(lat);
  const row = (q: 'p50' | 'max'): Row => ({
    scenario: 'listing',
    metric: `ls with a host down and a hung one: answer ${q}`,
    unit: 'ms',
    subject: 'ptyrelay/list (RelayClient)',
    value: lat.length ? round(s[q], 1) : null,
    better: 'lower',
    ...(q === 'max'
      ? { target: { text: `≤ ${TARGET_MS} ms`, met: lat.length ? s.max <= TARGET_MS : null } }
      : {}),
  });
  return {
    name: 'listing',
    rows: [row('p50'), row('max')],
    details: { latencyMs: lat },
    errors,
    durationMs: now() - t0,
  };
}
