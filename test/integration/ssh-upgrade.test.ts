import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RelayClient } from '../../provider/client/relay-client.js';
import type { PtyReattachEvent } from '../../provider/contract.js';
import { validateConfig } from '../../relay/service/config.js';
import { createHostRouter } from '../../relay/service/host-router.js';
import { createPtyExtension } from '../../relay/service/pty-extension.js';
import { type RelayServer, startRelayServer } from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/service/terminal-registry.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { OutputCollector, pidAlive, waitFor } from '../support/local-daemon.js';
import { TEST_TOKEN } from '../support/relay-fixture.js';
import { hostFor, relayHome } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';
import { buildStub, type StubBuild } from '../support/stub-builds.js';

const available = sshdAvailable();
if (!available) console.warn('skipping SSH upgrade tests: /usr/sbin/sshd is not installed');
/** A login user of this file alone: its daemons, installs and id counter are this file's. */
const USER = 'ptyrelay-upgrade';

/** Parent pid of a process (the daemon that spawned a PTY's shell). */
function ppidOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Pids of every process running as `uid`. */
function processesOf(uid: number): number[] {
  return readdirSync('/proc').flatMap((name) => {
    if (!/^\d+$/.test(name)) return [];
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const state = /^State:\s+(\S)/m.exec(status)?.[1];
      return Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) === uid && state !== 'Z' ? [Number(name)] : [];
    } catch {
      return [];
    }
  });
}

const numberOf = (id: string) => Number(/\/pty-(\d+)$/.exec(id)?.[1]);

/** A relay service of one build (its stub bundle) on `port`, serving host `h`. */
interface Relay {
  server: RelayServer;
  router: ReturnType<typeof createHostRouter>;
  registry: TerminalRegistry;
  ssh(): SshPtyProvider;
  close(): Promise<void>;
}

describe.skipIf(!available)('upgrading over SSH keeps terminal ids', { timeout: 180_000 }, () => {
  let sshd: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  let work: string;
  let buildA: StubBuild;
  let buildB: StubBuild;
  let uid: number;
  const clients: RelayClient[] = [];
  const relays: Relay[] = [];

  const userDirs = () => [join(sshd.userHome, '.cache', 'ptyrelay'), join(sshd.userHome, '.local', 'state', 'ptyrelay')];

  const startRelay = async (stub: StubBuild, port = 0): Promise<Relay> => {
    const config = validateConfig({ hosts: { h: hostFor(sshd) } });
    const router = createHostRouter(config, { localRuntimeDir: join(work, 'local-run'), stubPath: stub.path });
    const registry = new TerminalRegistry();
    const server = await startRelayServer({
      listen: { host: '127.0.0.1', port },
      token: TEST_TOKEN,
      router,
      registry,
      extensions: [createPtyExtension({ router, registry })],
    });
    const relay: Relay = {
      server,
      router,
      registry,
      ssh: () => router.providerFor('h') as SshPtyProvider,
      async close() {
        await server.close();
        await router.dispose();
      },
    };
    relays.push(relay);
    return relay;
  };

  const client = (url: string, clientId: string) => {
    const c = new RelayClient({ url, token: TEST_TOKEN, clientId, reconnect: { steps: [100, 200, 400] } });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    home = relayHome();
    work = mkdtempSync(join(tmpdir(), 'ptr-ssh-upgrade-'));
    [buildA, buildB] = await Promise.all([buildStub(work, 'build-a'), buildStub(work, 'build-b')]);
    sshd = await startSshd({ user: USER });
    uid = statSync(sshd.userHome).uid;
    // Daemons and ids of an earlier run of this file would make the counts below meaningless.
    for (const d of userDirs()) rmSync(d, { recursive: true, force: true });
  });

  afterAll(async () => {
    for (const c of clients) await c.dispose();
    for (const r of relays) await r.close().catch(() => {});
    await sshd?.stop();
    if (sshd) for (const d of userDirs()) rmSync(d, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
    home?.cleanup();
  });

  it('keeps the old terminal id, incarnation and bytes across a relay restart on a new build; new ids differ, also after a daemon restart', async () => {
    expect(buildA.buildId).not.toBe(buildB.buildId);

    // Build A: a terminal, with a RelayClient attached that will ride through the upgrade.
    const relayA = await startRelay(buildA);
    const port = relayA.server.port;
    const c = client(relayA.server.url, 'upgrader');
    const reattaches: PtyReattachEvent[] = [];
    c.onReattach((e) => reattaches.push(e));
    const out = new OutputCollector(c);
    const old = await c.spawn({ host: 'h', cols: 80, rows: 24, command: 'sh', args: ['-c', 'echo started; exec cat'] });
    out.bind(old.id);
    await c.write(old.id, 'one\r');
    await out.waitText('one\r\none\r\n');
    const daemonA = relayA.ssh().linkInfo('h')?.daemonPid;
    expect(relayA.ssh().linkInfo('h')?.deploy.buildId).toBe(buildA.buildId);
    expect(ppidOf(old.pid)).toBe(daemonA);

    // The relay restarts as build B on the same port; the client reconnects by itself.
    const firstRelay = c.serverInstanceId;
    await relayA.close();
    const relayB = await startRelay(buildB, port);
    await waitFor(() => c.serverInstanceId !== firstRelay && c.linkState.state === 'connected', 20_000, 'the client to reconnect');
    await c.write(old.id, 'two\r');
    await out.waitText('two\r\ntwo\r\n', 20_000);
    expect(out.gaps).toEqual([]);
    // Same terminal, same process, no reset and no expiry: the client never noticed the upgrade.
    expect(reattaches).toEqual([]);
    expect(relayB.registry.get(old.id).incarnationId).toBe(old.incarnationId);
    expect(relayB.ssh().linkInfo('h')?.deploy.buildId).toBe(buildB.buildId);
    const daemonB = relayB.ssh().linkInfo('h')?.daemonPid;
    expect(daemonB).not.toBe(daemonA);
    expect(ppidOf(old.pid)).toBe(daemonA);

    // Build B spawns in its own daemon, under an id nobody had.
    const fresh = await c.spawn({ host: 'h', cols: 80, rows: 24, command: 'cat' });
    expect(fresh.id).not.toBe(old.id);
    expect(fresh.id).toMatch(/^h\/pty-\d+$/);
    expect(ppidOf(fresh.pid)).toBe(daemonB);
    const listed = (await c.listTerminals('h')).map((t) => t.id);
    expect(listed).toEqual(expect.arrayContaining([old.id, fresh.id]));
    expect(listed.some((id) => id.includes(':'))).toBe(false);

    // A client that never saw the terminal attaches it by its original id: same incarnation, every byte.
    const late = client(relayB.server.url, 'late');
    const a = await late.attach(old.id, { fromSeq: 0, expectedIncarnationId: old.incarnationId });
    expect(a.id).toBe(old.id);
    expect(a.incarnationId).toBe(old.incarnationId);
    expect(Buffer.from(a.replay ?? []).equals(out.bytes)).toBe(true);

    // Ids are not reused after the daemon restarts: end the new terminal and build B's daemon.
    await c.shutdown(fresh.id, { immediate: true });
    await relayB.ssh().shutdownDaemon('h');
    await waitFor(() => !pidAlive(daemonB!), 10_000, "build B's daemon to exit");
    const again = await c.spawn({ host: 'h', cols: 80, rows: 24, command: 'cat' });
    const daemonB2 = relayB.ssh().linkInfo('h')?.daemonPid;
    expect(daemonB2).not.toBe(daemonB);
    expect(ppidOf(again.pid)).toBe(daemonB2);
    expect([old.id, fresh.id]).not.toContain(again.id);
    expect(numberOf(again.id)).toBeGreaterThan(Math.max(numberOf(old.id), numberOf(fresh.id)));

    // The old terminal still answers under its id; once it ends, build A's daemon exits.
    await c.write(old.id, 'three\r');
    await out.waitText('three\r\nthree\r\n');
    expect(out.gaps).toEqual([]);
    await c.shutdown(old.id, { immediate: true });
    await waitFor(() => !pidAlive(daemonA!), 10_000, "build A's daemon to exit");
    await c.shutdown(again.id, { immediate: true });
    await relayB.ssh().shutdownDaemon('h');
    await waitFor(() => !pidAlive(daemonB2!), 10_000, "build B's second daemon to exit");
    for (const x of clients) await x.dispose();
    await relayB.close();
    // Nothing of the test user's is left running on the host.
    await waitFor(() => processesOf(uid).length === 0, 10_000, 'no process of the test user');
  });
});
