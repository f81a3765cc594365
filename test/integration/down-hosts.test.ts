import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentService } from '../../relay/agents/agent-stack.js';
import { createTerminalMcpServer } from '../../relay/agents/mcp-tools.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { allOf, rootAvailable } from '../support/capabilities.js';
import { runCli } from '../support/cli-runner.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { open as openWs } from '../support/relay-test-support.js';
import { hostFor, relayHome } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = allOf(sshdAvailable(), rootAvailable('throwaway login users'));

/** Login users of this file's own (their daemons are nobody else's); removed after. */
const USER_UP = 'ptyrelay-t52-up';
const USER_DOWN = 'ptyrelay-t52-down';
/** What a listing must answer within (the 2 s figure is the bench's; a CLI start takes ~1 s). */
const ANSWER_MS = 5000;

describe.skipIf(!available)('one host down never blocks the rest', { timeout: 180_000 }, () => {
  let up: SshdInstance;
  let down: SshdInstance;
  let fx: RelayFixture;
  let home: ReturnType<typeof relayHome>;
  let env: NodeJS.ProcessEnv;
  const ids: Record<string, string> = {};

  const timed = async (args: string[]) => {
    const t0 = Date.now();
    const r = await runCli(args, env);
    return { ...r, ms: Date.now() - t0 };
  };

  beforeAll(async () => {
    home = relayHome();
    up = await startSshd({ user: USER_UP });
    down = await startSshd({ user: USER_DOWN });
    const emptyKnownHosts = join(home.home, 'known_hosts_empty');
    writeFileSync(emptyKnownHosts, '');
    fx = await startRelay({
      config: {
        hosts: {
          up: hostFor(up),
          down: hostFor(down),
          // The same machine as `up`, under a name whose key nobody has trusted yet.
          fresh: hostFor(up, { knownHostsFile: emptyKnownHosts }),
        },
      },
    });
    env = { ...process.env, PTYRELAY_URL: fx.url, PTYRELAY_TOKEN: TEST_TOKEN, HOME: fx.local.home };
    delete env.PTYRELAY_CLIENT_ID;
    for (const host of ['local', 'up', 'down']) {
      const r = await runCli(['open', host, '--', 'sleep', '300'], env);
      expect(r.code, r.stderr).toBe(0);
      ids[host] = r.stdout.trim();
    }
    // The host goes away as a machine does: sshd (so nothing brings the link back), then the
    // processes it left (the daemon, its terminals).
    await down.stop();
    spawnSync('pkill', ['-KILL', '-u', USER_DOWN], { stdio: 'ignore' });
    await waitFor(
      () => fx.router.linkState('down').state === 'reconnecting',
      30_000,
      'the link to the stopped host to retry',
    );
  });
  afterAll(async () => {
    await (fx?.router.providerFor('up') as SshPtyProvider | undefined)?.shutdownDaemon('up').catch(() => {});
    await fx?.cleanup();
    await up?.stop();
    await down?.stop();
    home?.cleanup();
    for (const u of [USER_UP, USER_DOWN]) spawnSync('userdel', ['-r', u], { stdio: 'ignore' });
  });

  it('`ls` lists the live terminals at once, names the down and the untrusted host, exits 3', async () => {
    const r = await timed(['ls']);
    expect(r.code, r.stderr).toBe(3);
    expect(r.ms).toBeLessThan(ANSWER_MS);
    expect(r.stdout).toContain(ids.local);
    expect(r.stdout).toContain(ids.up);
    expect(r.stdout).not.toContain('down/');
    expect(r.stderr).toMatch(/left out down: unreachable: .*(ECONNREFUSED|refused|closed)/);
    expect(r.stderr).toMatch(/left out fresh: untrusted: .*SHA256:.*\(run: ptyrelay hosts trust fresh\)/);

    const j = await timed(['ls', '--json']);
    expect(j.code).toBe(3);
    const listing = JSON.parse(j.stdout);
    expect(listing.partial).toBe(true);
    const byHost = Object.fromEntries(listing.unavailable.map((u: { host: string }) => [u.host, u]));
    expect(byHost.down.status).toBe('unreachable');
    expect(byHost.fresh).toMatchObject({ status: 'untrusted', fix: 'ptyrelay hosts trust fresh' });
    expect(byHost.fresh.fingerprint).toMatch(/^SHA256:/);
    expect(listing.terminals.map((t: { id: string }) => t.id).sort()).toEqual([ids.local, ids.up].sort());
  });

  it('`ls HOST` of the live host is complete (exit 0); of the down host, partial at once', async () => {
    const live = await timed(['ls', 'up']);
    expect(live.code, live.stderr).toBe(0);
    expect(live.stdout).toContain(ids.up);
    const gone = await timed(['ls', 'down']);
    expect(gone.code).toBe(3);
    expect(gone.ms).toBeLessThan(ANSWER_MS);
    expect(gone.stderr).toContain('left out down: unreachable');
  });

  it('`daemons` answers within its deadline with the live daemons and the down host named', async () => {
    const r = await timed(['daemons']);
    expect(r.code, r.stderr).toBe(3);
    expect(r.ms).toBeLessThan(ANSWER_MS);
    expect(r.stdout).toMatch(/^local\s+\S+\s+\d+/m);
    expect(r.stdout).toMatch(/^up\s+\S+\s+\d+/m);
    expect(r.stdout).toMatch(/^down\s+-.*unreachable/m);
    expect(r.stderr).toContain('left out down: unreachable');
    const one = await timed(['daemons', 'down']);
    expect(one.code).toBe(3);
    expect(one.ms).toBeLessThan(ANSWER_MS);
  });

  it('`hosts` shows the untrusted host with its cause once a listing met it', async () => {
    const r = await timed(['hosts']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^down\s+reconnecting \(attempt \d+/m);
    expect(r.stdout).toMatch(/^fresh\s+lost: .*ptyrelay hosts trust fresh/m);
    expect(r.stdout).toMatch(/^up\s+connected/m);
  });

  it('a bare id is answered from what the hosts that answered hold, without waiting on the rest', async () => {
    const bare = ids.up!.slice(ids.up!.indexOf('/') + 1);
    const r = await timed(['read', bare]);
    expect(r.code).toBe(2);
    expect(r.ms).toBeLessThan(ANSWER_MS);
    expect(r.stderr).toContain(`terminal ids are HOST/ID: ${bare} matches`);
    expect(r.stderr).toContain(ids.up);
  });

  it('web/overview and the AHP catalog answer from the catalog at once; the overview names the down host', async () => {
    const c = await openWs(fx.url, { token: TEST_TOKEN });
    try {
      const t0 = Date.now();
      const overview = await c.request('web/overview');
      expect(Date.now() - t0).toBeLessThan(ANSWER_MS);
      const shown = overview.terminals.map((t: { id: string }) => t.id);
      expect(shown).toEqual(expect.arrayContaining([ids.local, ids.up]));
      expect(overview.unavailable).toEqual([
        expect.objectContaining({
          host: 'down',
          status: 'unreachable',
          reason: expect.stringMatching(/refused|closed/),
        }),
      ]);
      const t1 = Date.now();
      const init = await c.request('initialize', { protocolVersions: ['0.1.0'], clientId: 'down-hosts' });
      expect(Date.now() - t1).toBeLessThan(ANSWER_MS);
      const root = init.snapshots.find((x: { resource: string }) => x.resource === 'ahp-root://').state;
      const resources = root.terminals.map((t: { resource: string }) => t.resource);
      expect(resources).toEqual(
        expect.arrayContaining([`ptyrelay-terminal:/${ids.local}`, `ptyrelay-terminal:/${ids.up}`]),
      );
      expect(root.unavailableHosts).toEqual([
        expect.objectContaining({ host: 'down', status: 'unreachable' }),
      ]);
    } finally {
      c.close();
    }
  });

  it('MCP terminal_list answers at once and names the down host', async () => {
    const service = createAgentService({ router: fx.router, registry: fx.registry });
    const owner = service.owner('agent:down-hosts');
    const server = createTerminalMcpServer(service, owner, '0.0.0');
    const [a, b] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'down-hosts', version: '1.0.0' });
    try {
      await Promise.all([server.connect(a), client.connect(b)]);
      const t0 = Date.now();
      const r = (await client.callTool({ name: 'terminal_list', arguments: {} })) as CallToolResult;
      expect(Date.now() - t0).toBeLessThan(ANSWER_MS);
      const text = r.content.map((x) => (x.type === 'text' ? x.text : '')).join('');
      expect(text).toMatch(/host down is unreachable: .*(refused|closed)/);
      expect(
        (r.structuredContent as { unavailable: { host: string }[] }).unavailable.map((u) => u.host),
      ).toEqual(['down']);
    } finally {
      await client.close();
      await server.close();
      await service.dispose({ close: true });
    }
  });

  it('UNKNOWN_HOST names the hosts the relay has', async () => {
    const r = await timed(['open', 'sshbox']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('UNKNOWN_HOST: no host named sshbox is configured');
    expect(r.stderr).toContain('(hosts: local, up, down, fresh)');
  });
});
