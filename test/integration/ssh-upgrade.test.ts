import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RelayClient } from '../../provider/client/relay-client.js';
import type { PtyReattachEvent } from '../../provider/contract.js';
import type { TerminalState } from '../../relay/ahp/types.js';
import { terminalUri } from '../../relay/ahp/uris.js';
import { validateConfig } from '../../relay/service/config.js';
import { createHostRouter } from '../../relay/service/host-router.js';
import { createPtyExtension } from '../../relay/service/pty-extension.js';
import { type RelayServer, startRelayServer } from '../../relay/service/relay-server.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import { TEST_TOKEN } from '../support/relay-fixture.js';
import { open as openAhp, type TestClient } from '../support/relay-test-support.js';
import { hostFor, relayHome, remoteRuntimeDir } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';
import { buildStub, type StubBuild } from '../support/stub-builds.js';

const available = sshdAvailable();
/**
 * Each run deploys builds of its own (the run tag is in their bytes, so they get install dirs of
 * their own) and keeps its daemons and id counter in its own dirs: runs of other worktrees share the
 * login user.
 */
const RUN = `${process.pid}-${Date.now()}`;
const runtimeDir = remoteRuntimeDir('upgrade');
const stateDir = `${runtimeDir}-state`;

/** The fields after a process's `(comm)` in /proc/<pid>/stat, or undefined once it is gone. */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Parent pid of a process (the daemon that spawned a PTY's program). */
const ppidOf = (pid: number) => Number(statFields(pid)?.[1]);

/** Live and not a zombie (this VM's PID 1 reaps orphans lazily). */
const running = (pid: number | string) => (statFields(pid)?.[0] ?? 'Z') !== 'Z';

/** Live processes whose command line mentions `text` (this run's daemons name its runtime dir). */
function processesMentioning(text: string): number[] {
  return readdirSync('/proc').flatMap((name) => {
    if (!/^\d+$/.test(name) || !running(name)) return [];
    try {
      return readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(text) ? [Number(name)] : [];
    } catch {
      return [];
    }
  });
}

/** The text an AHP terminal state holds. */
const contentText = (s: TerminalState) =>
  s.content.map((p) => (p.type === 'unclassified' ? p.value : p.commandLine + p.output)).join('');

const numberOf = (id: string) => Number(/\/pty-(\d+)$/.exec(id)?.[1]);

/** A relay service of one build (its stub bundle) on `port`, serving host `h`. */
interface Relay {
  server: RelayServer;
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
  const clients: RelayClient[] = [];
  const ahpClients: TestClient[] = [];
  const relays: Relay[] = [];
  /** Install dirs this run's builds got on the host, and the PTYs it spawned. */
  const installs = new Set<string>();
  const ptys: number[] = [];

  const startRelay = async (stub: StubBuild, port = 0): Promise<Relay> => {
    const config = validateConfig({ hosts: { h: hostFor(sshd) } });
    const router = await createHostRouter(config, {
      localRuntimeDir: join(work, 'local-run'),
      stubPath: stub.path,
      daemonArgs: ['--runtime-dir', runtimeDir, '--state-dir', stateDir],
    });
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

  /**
   * `reattachWaitMs: 1`: after a reconnect the client resends its input at once instead of after its
   * re-attaches, so input reaches a restarted relay before it knows whose terminal it is.
   */
  const client = (url: string, clientId: string) => {
    const c = new RelayClient({
      url,
      token: TEST_TOKEN,
      clientId,
      reconnect: { steps: [100, 200, 400] },
      reattachWaitMs: 1,
    });
    clients.push(c);
    return c;
  };

  /** The daemon serving host `h` for a relay, and its install dir (removed after the run). */
  const daemonOf = (relay: Relay) => {
    const info = relay.ssh().linkInfo('h');
    if (!info?.daemonPid) throw new Error('host h is not connected');
    installs.add(dirname(info.deploy.stubPath));
    return { pid: info.daemonPid, buildId: info.deploy.buildId };
  };

  const ahp = async (url: string) => {
    const a = await openAhp(url, { token: TEST_TOKEN });
    ahpClients.push(a);
    return a;
  };

  beforeAll(async () => {
    home = relayHome();
    work = mkdtempSync(join(tmpdir(), 'ptr-ssh-upgrade-'));
    [buildA, buildB] = await Promise.all([buildStub(work, `a-${RUN}`), buildStub(work, `b-${RUN}`)]);
    sshd = await startSshd();
  });

  afterAll(async () => {
    for (const c of clients) await c.dispose();
    for (const a of ahpClients) a.close();
    for (const r of relays) await r.close().catch(() => {});
    // Only after a failure midway (the test checks they ended): this run's daemons and PTYs.
    for (const pid of [...processesMentioning(runtimeDir), ...ptys.filter(running)])
      process.kill(pid, 'SIGKILL');
    await sshd?.stop();
    for (const d of [runtimeDir, stateDir, ...installs]) rmSync(d, { recursive: true, force: true });
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
    const old = await c.spawn({
      host: 'h',
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'echo started; exec cat'],
    });
    out.bind(old.id);
    ptys.push(old.pid);
    await c.write(old.id, 'one\r');
    await out.waitText('one\r\none\r\n');
    // An AHP client watches the same terminal through its URI.
    const watcher = await ahp(relayA.server.url);
    const uri = terminalUri(old.id);
    await watcher.request('initialize', {
      protocolVersions: ['0.1.0'],
      clientId: 'watcher',
      initialSubscriptions: [uri],
    });
    await c.write(old.id, 'seen\r');
    await out.waitText('seen\r\nseen\r\n');
    await watcher.waitFor(() => watcher.dataOf(uri).includes('seen\r\nseen\r\n'), 'AHP data');
    const lastSeen = watcher.envelopes.at(-1)?.serverSeq ?? 0;
    const daemonA = daemonOf(relayA);
    expect(daemonA.buildId).toBe(buildA.buildId);
    expect(ppidOf(old.pid)).toBe(daemonA.pid);

    // The relay restarts as build B on the same port; the client reconnects by itself.
    const firstRelay = c.serverInstanceId;
    await relayA.close();
    const relayB = await startRelay(buildB, port);
    // Typed as soon as the client is back, possibly before its re-attach (first contact with build B
    // deploys it) has told the new relay whose terminal this is: it waits for the re-attach.
    await waitFor(
      () => c.serverInstanceId !== firstRelay && c.linkState.state === 'connected',
      30_000,
      'the client to reconnect',
    );
    await c.write(old.id, 'two\r');
    await out.waitText('two\r\ntwo\r\n', 20_000);
    expect(out.gaps).toEqual([]);
    // Same terminal, same process, no reset and no expiry: the client never noticed the upgrade.
    expect(reattaches).toEqual([]);
    expect(relayB.registry.get(old.id).incarnationId).toBe(old.incarnationId);
    const daemonB = daemonOf(relayB);
    expect(daemonB.buildId).toBe(buildB.buildId);
    expect(daemonB.pid).not.toBe(daemonA.pid);
    expect(ppidOf(old.pid)).toBe(daemonA.pid);

    // The AHP client reconnects to the new relay with the URI it held: the same terminal, its whole
    // history (every byte the host kept, from before the upgrade), then live output.
    const watcher2 = await ahp(relayB.server.url);
    const re = await watcher2.request('reconnect', {
      clientId: 'watcher',
      lastSeenServerSeq: lastSeen,
      subscriptions: [uri],
    });
    expect(re.type).toBe('snapshot');
    expect(re.snapshots.map((x: { resource: string }) => x.resource)).toEqual([uri]);
    expect(contentText(re.snapshots[0].state)).toBe(out.text);
    await c.write(old.id, 'live\r');
    await watcher2.waitFor(() => watcher2.dataOf(uri).includes('live\r\nlive\r\n'), 'AHP live data');

    // Build B spawns in its own daemon, under an id nobody had.
    const fresh = await c.spawn({ host: 'h', cols: 80, rows: 24, command: 'cat' });
    ptys.push(fresh.pid);
    expect(fresh.id).not.toBe(old.id);
    expect(fresh.id).toMatch(/^h\/pty-\d+$/);
    expect(ppidOf(fresh.pid)).toBe(daemonB.pid);
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
    await waitFor(() => !running(daemonB.pid), 10_000, "build B's daemon to exit");
    const again = await c.spawn({ host: 'h', cols: 80, rows: 24, command: 'cat' });
    ptys.push(again.pid);
    const daemonB2 = daemonOf(relayB);
    expect(daemonB2.pid).not.toBe(daemonB.pid);
    expect(ppidOf(again.pid)).toBe(daemonB2.pid);
    expect([old.id, fresh.id]).not.toContain(again.id);
    expect(numberOf(again.id)).toBeGreaterThan(Math.max(numberOf(old.id), numberOf(fresh.id)));

    // The old terminal still answers under its id; once it ends, build A's daemon exits.
    await c.write(old.id, 'three\r');
    await out.waitText('three\r\nthree\r\n');
    expect(out.gaps).toEqual([]);
    await c.shutdown(old.id, { immediate: true });
    await waitFor(() => !running(daemonA.pid), 10_000, "build A's daemon to exit");
    await c.shutdown(again.id, { immediate: true });
    await relayB.ssh().shutdownDaemon('h');
    for (const x of clients) await x.dispose();
    await relayB.close();
    // Nothing of this run is left running on the host.
    await waitFor(
      () => processesMentioning(runtimeDir).length === 0 && !ptys.some(running),
      10_000,
      "this run's daemons and PTYs to end",
    );
  });
});
