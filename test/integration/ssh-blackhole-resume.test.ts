import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyExitEvent, PtyReattachEvent } from '../../provider/contract.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import type { FaultProxy } from '../support/fault-proxy.js';
import { waitFor } from '../support/local-daemon.js';
import { type ProxiedHost, startProxiedHost } from '../support/proxied-host.js';
import { type SshdInstance, sshdAvailable } from '../support/sshd.js';
import { expectedStream, writeGenerator } from '../support/stream-generator.js';

const available = sshdAvailable();

const SEED = 7;
const BYTES = 2 * 1024 * 1024;
const RATE = 256 * 1024;
const BLACKHOLE_MS = 3000;
/**
 * When the relay gives up on the old connection, inside the blackhole. The dead-link check does it
 * at ≈2.9 s with the bench's settings, but when exactly depends on its 1 s tick; forcing it here puts
 * a reconnect attempt into the blackhole just before the network returns, every run.
 */
const DEAD_AT_MS = 2700;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tcpSockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;

describe.skipIf(!available)('resume after a blackhole over SSH', () => {
  let fx: ProxiedHost;
  let sshd: SshdInstance;
  let proxy: FaultProxy;
  let provider: SshPtyProvider;
  let dir: string;
  let runtimeDir: string;
  const daemons = () =>
    spawnSync('pgrep', ['-u', sshd.user, '-af', runtimeDir], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((l) => / daemon( |$)/.test(l));

  beforeAll(async () => {
    // The product's reconnect ladder and 2 s reconnect handshake limit.
    fx = await startProxiedHost('blackhole');
    ({ sshd, proxy, provider, dir, runtimeDir } = fx);
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('resumes well within a second and a half of a 3 s blackhole, byte-exact, on one connection and one daemon', async () => {
    const hash = createHash('sha256');
    let bytes = 0;
    let nextSeq = 0;
    let gaps = 0;
    let restoredAt = 0;
    let firstAfterRestore = 0;
    let id = '';
    const exits: PtyExitEvent[] = [];
    const reattach: PtyReattachEvent[] = [];
    const states: string[] = [];
    provider.onData((e) => {
      if (e.id !== id) return;
      if (restoredAt && !firstAfterRestore) firstAfterRestore = performance.now();
      if (e.seq !== nextSeq) gaps++;
      nextSeq = e.seq + e.data.length;
      hash.update(e.data);
      bytes += e.data.length;
    });
    provider.onExit((e) => exits.push(e));
    provider.onReattach((e) => reattach.push(e));
    provider.onLinkState((e) => states.push(e.state.state));

    const r = await provider.spawn({
      host: 'h',
      cols: 120,
      rows: 30,
      command: 'node',
      args: [writeGenerator(dir), String(SEED), String(BYTES), String(RATE)],
    });
    id = r.id;
    await waitFor(() => bytes > 64 * 1024, 10_000, 'the stream to flow');
    const daemonPid = provider.linkInfo('h')?.daemonPid;
    expect(daemonPid).toBeGreaterThan(0);
    const connectionsBefore = proxy.stats().connections;
    const socketsBefore = tcpSockets();
    states.length = 0;

    proxy.blackhole();
    await sleep(DEAD_AT_MS);
    provider.dropLink('h');
    await sleep(BLACKHOLE_MS - DEAD_AT_MS);
    proxy.restore();
    restoredAt = performance.now();
    await waitFor(() => firstAfterRestore > 0, 10_000, 'the first byte after the restore');
    const resumeMs = firstAfterRestore - restoredAt;
    // Before attempts raced, the attempt the blackhole swallowed held the reconnect for its 2 s limit.
    expect(resumeMs).toBeLessThan(1500);

    await waitFor(() => exits.some((e) => e.id === id), 60_000, 'the generator to exit');
    const exp = expectedStream(SEED, BYTES);
    await waitFor(() => bytes >= exp.bytes, 5000, 'the last bytes').catch(() => {});
    expect({ gaps, bytes }).toEqual({ gaps: 0, bytes: exp.bytes });
    expect(hash.digest('hex')).toBe(exp.sha256);
    expect(exits.filter((e) => e.id === id).map((e) => e.exitCode)).toEqual([0]);
    expect(reattach).toEqual([]);

    // One winner: the link came back once, to the same daemon, and no second daemon started.
    expect(states.filter((s) => s === 'connected')).toHaveLength(1);
    expect(provider.linkInfo('h')?.daemonPid).toBe(daemonPid);
    expect(daemons()).toHaveLength(1);
    // The swallowed attempt was raced, not waited for; every loser closed its connection.
    expect(proxy.stats().connections - connectionsBefore).toBeGreaterThanOrEqual(2);
    await waitFor(() => proxy.stats().active === 1, 10_000, 'losing connections to close');
    await waitFor(() => tcpSockets() === socketsBefore, 10_000, 'relay sockets back to one link');
    console.log(
      `blackhole ${BLACKHOLE_MS} ms: first byte ${resumeMs.toFixed(0)} ms after restore; ` +
        `${proxy.stats().connections - connectionsBefore} reconnect attempts; states ${states.join(' → ')}`,
    );
  }, 90_000);
});
