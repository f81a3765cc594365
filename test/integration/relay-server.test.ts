import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { validateConfig } from '../../relay/service/config.js';
import { createHostRouter } from '../../relay/service/host-router.js';
import { type RelayServer, startRelayServer } from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import { open, type TestClient } from '../support/relay-test-support.js';

const TOKEN = 'integration-token-0123456789abcdef';
const ORIGIN = 'https://ide.example.com';

/**
 * The relay server over the real local daemon: a bash terminal created through AHP, driven with
 * dispatched input, observed through terminal/data and command-detection actions.
 */
describe('relay server with the real local provider', () => {
  let root: string;
  let home: string;
  let savedHome: string | undefined;
  let router: Awaited<ReturnType<typeof createHostRouter>>;
  let server: RelayServer;
  const clients: TestClient[] = [];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'ptr-srv-'));
    home = join(root, 'home');
    mkdirSync(home);
    for (const f of ['.bashrc', '.bash_profile']) writeFileSync(join(home, f), '');
    // The daemon started below inherits this environment: shells get an empty rc, a known prompt.
    savedHome = process.env.HOME;
    process.env.HOME = home;
    router = await createHostRouter(validateConfig({}), { localRuntimeDir: join(root, 'run') });
    server = await startRelayServer({
      listen: { host: '127.0.0.1', port: 0 },
      token: TOKEN,
      allowedOrigins: [ORIGIN],
      router,
      registry: new TerminalRegistry(),
    });
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await server?.close();
    try {
      await (router.providerFor('local') as LocalPtyProvider).shutdownDaemon();
    } catch {
      // never started
    }
    await router?.dispose();
    process.env.HOME = savedHome;
    rmSync(root, { recursive: true, force: true });
  });

  async function client(clientId: string): Promise<TestClient> {
    const c = await open(server.url, { token: TOKEN });
    clients.push(c);
    await c.request('initialize', { channel: 'ahp-root://', protocolVersions: ['0.1.0'], clientId });
    return c;
  }

  it('GET /healthz says only ok without a token, 401 with a wrong one, the hosts with a right one; /metrics needs it', async () => {
    const h = await fetch(`${server.httpUrl}/healthz`);
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ ok: true });
    // A token that does not authenticate is told so (the web page tells a wrong token from a down relay).
    const bad = await fetch(`${server.httpUrl}/healthz`, { headers: { authorization: 'Bearer nope' } });
    expect(bad.status).toBe(401);
    const authed = await fetch(`${server.httpUrl}/healthz`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(await authed.json()).toMatchObject({ ok: true, hosts: { local: { state: expect.any(String) } } });
    expect((await fetch(`${server.httpUrl}/metrics`)).status).toBe(401);
    const wrong = await fetch(`${server.httpUrl}/metrics`, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const m = await fetch(`${server.httpUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(m.status).toBe(200);
    const text = await m.text();
    expect(text).toContain('ptyrelay_sessions');
    expect(text).toContain('ptyrelay_bytes_out_total');
    expect(text).toContain('ptyrelay_link_state{host="local"');
    expect((await fetch(`${server.httpUrl}/nope`)).status).toBe(404);
  });

  it('accepts an allowed browser Origin with the token in a subprotocol', async () => {
    const c = await open(server.url, {
      token: TOKEN,
      viaSubprotocol: true,
      protocols: ['ahp.v1'],
      origin: ORIGIN,
    });
    clients.push(c);
    expect(c.ws.protocol).toBe('ahp.v1');
    const r = await c.request('initialize', { protocolVersions: ['0.1.0'], clientId: 'browser' });
    expect(r.protocolVersion).toBe('0.1.0');
  });

  it('runs bash: input echoes back as terminal/data, `false` finishes with exit code 1', async () => {
    const a = await client('bash-client');
    const { channel } = await a.request('createTerminal', {
      claim: { kind: 'client', clientId: 'bash-client' },
      command: 'bash',
      cwd: `file://${home}`,
      cols: 100,
      rows: 30,
      name: 'bash',
    });
    expect(channel).toMatch(/^ptyrelay-terminal:\/local\/pty-\d+$/);
    const { snapshot } = await a.request('subscribe', { channel });
    expect(snapshot.state).toMatchObject({
      claim: { kind: 'client', clientId: 'bash-client' },
      cols: 100,
      rows: 30,
    });
    // Shell integration announces itself (possibly already in the snapshot).
    if (!snapshot.state.supportsCommandDetection) {
      await a.waitEnvelope(
        (e) => e.channel === channel && e.action.type === 'terminal/commandDetectionAvailable',
        'command detection',
      );
    }
    let seq = 1;
    const input = (data: string) =>
      a.notify('dispatchAction', { channel, clientSeq: seq++, action: { type: 'terminal/input', data } });

    input('echo relay-$((6*7))-ok\r');
    await a.waitFor(() => a.dataOf(channel).includes('relay-42-ok'), 'echoed output');
    expect(a.dataOf(channel)).not.toContain('\x1b]633');
    const echo = await a.waitEnvelope((e) => e.action.type === 'terminal/input', 'input echo');
    expect(echo.origin).toEqual({ clientId: 'bash-client', clientSeq: 1 });

    input('false\r');
    const executed = await a.waitEnvelope(
      (e) =>
        e.channel === channel &&
        e.action.type === 'terminal/commandExecuted' &&
        e.action.commandLine === 'false',
      'commandExecuted false',
    );
    const commandId = (executed.action as { commandId: string }).commandId;
    const finished = await a.waitEnvelope(
      (e) =>
        e.channel === channel &&
        e.action.type === 'terminal/commandFinished' &&
        e.action.commandId === commandId,
      'commandFinished false',
    );
    expect(finished.action).toMatchObject({ exitCode: 1, durationMs: expect.any(Number) });
    expect(finished.serverSeq).toBeGreaterThan(executed.serverSeq);

    const after = (await a.request('subscribe', { channel })).snapshot.state;
    expect(after.supportsCommandDetection).toBe(true);
    expect(after.content).toContainEqual(
      expect.objectContaining({ type: 'command', commandLine: 'false', isComplete: true, exitCode: 1 }),
    );
    expect(after.cwd).toBe(`file://${home}`);

    // A second client cannot type into it.
    const b = await client('other');
    b.notify('dispatchAction', { channel, clientSeq: 1, action: { type: 'terminal/input', data: 'exit\r' } });
    const rej = await b.waitEnvelope((e) => e.origin?.clientSeq === 1, 'rejection');
    expect(rej.rejectionReason).toMatch(/^NOT_OWNER/);

    // exit → terminal/exited and the catalog carries the exit code; dispose removes it.
    input('exit 3\r');
    const exited = await a.waitEnvelope(
      (e) => e.channel === channel && e.action.type === 'terminal/exited',
      'exit',
    );
    expect(exited.action).toMatchObject({ exitCode: 3 });
    await a.waitEnvelope(
      (e) =>
        e.action.type === 'root/terminalsChanged' &&
        e.action.terminals.some((t) => t.resource === channel && t.exitCode === 3),
      'catalog exit code',
    );
    expect((await a.call('disposeTerminal', { channel })).result).toEqual({});
    await a.waitEnvelope(
      (e) =>
        e.action.type === 'root/terminalsChanged' && !e.action.terminals.some((t) => t.resource === channel),
      'catalog removal',
    );
  });
});
