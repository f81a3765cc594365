/**
 * A host freezes (`docker pause`: every process stops, the kernel still holds its sockets) for
 * 20 s and comes back. The relay declares the link dead meanwhile and reconnects once the host
 * answers; every session resumes with an exact replay: each consumer's bytes equal what its
 * program wrote, with no reset, and input typed during the freeze arrives once.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LinkState, PtyReattachEvent } from '../../provider/contract.js';
import { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import { relayHome } from '../support/ssh-fixture.js';
import { containerEngine, reportSkip } from './support/container-engine.js';
import {
  type HostContainer,
  makeRelayKey,
  REMOTE_RUNTIME_DIR,
  type RelayKey,
  startHost,
} from './support/host-container.js';

const engine = containerEngine();
reportSkip('host pause', engine);
const HOST = 'sleeper';
/** The outage: longer than the relay's dead-link verdict, shorter than the credit grace (30 s). */
const PAUSE_MS = 20_000;
/**
 * Dead-link verdict for this relay: well inside the pause, so the link is surely declared dead
 * and the reconnect path (not a revived TCP connection) carries the resume.
 */
const DEAD_AFTER_MS = 5000;
const WRITERS = 3;
/** docker pause/unpause answer in well under a second; a loaded machine may take longer. */
const DOCKER_CLI_TIMEOUT_MS = 30_000;
const PAUSE_ATTEMPTS = 3;
const LINES = 120;
/** Each writer prints a line every 0.1 s: 12 s of output without the pause. */
const writerScript = (n: number) =>
  `i=0; while [ $i -lt ${LINES} ]; do echo "w${n} line $i"; i=$((i+1)); sleep 0.1; done; read x`;
const expectedText = (n: number) => Array.from({ length: LINES }, (_, i) => `w${n} line ${i}\r\n`).join('');

describe.skipIf(!engine.ok)('a host paused for 20 s', () => {
  let key: RelayKey;
  let home: { cleanup(): void };
  let host: HostContainer;
  let provider: SshPtyProvider;

  beforeAll(async () => {
    if (!engine.ok) return;
    home = relayHome();
    key = makeRelayKey();
    host = await startHost(engine.images.host, key, HOST);
    provider = new SshPtyProvider({
      hosts: { [HOST]: host.ssh },
      daemonArgs: ['--runtime-dir', REMOTE_RUNTIME_DIR],
      link: { health: { deadAfterMs: DEAD_AFTER_MS } },
    });
  }, 120_000);

  afterAll(async () => {
    await provider?.dispose();
    await host?.stop();
    key?.cleanup();
    home?.cleanup();
  }, 60_000);

  it('resumes every session with an exact replay after unpause', async () => {
    const states: LinkState[] = [];
    const reattached: PtyReattachEvent[] = [];
    provider.onLinkState((e) => states.push(e.state));
    provider.onReattach((e) => reattached.push(e));
    const outs = Array.from({ length: WRITERS }, () => new OutputCollector(provider));
    const writers = await Promise.all(
      outs.map((_, n) =>
        provider.spawn({ host: HOST, cols: 80, rows: 24, command: 'sh', args: ['-c', writerScript(n)] }),
      ),
    );
    for (const [n, r] of writers.entries()) outs[n]!.bind(r.id, r.providerSequence.value);
    const echoOut = new OutputCollector(provider);
    const echo = await provider.spawn({ host: HOST, cols: 80, rows: 24, command: 'cat' });
    echoOut.bind(echo.id, echo.providerSequence.value);
    await Promise.all(outs.map((o, n) => o.waitText(`w${n} line 10\r\n`, 20_000)));

    let paused = true;
    pauseContainer(host.container.getId());
    const pausedAt = Date.now();
    try {
      // Typed while the host is frozen: queued by the relay, applied once after the resume.
      await new Promise((r) => setTimeout(r, 1000));
      const typed = provider.write(echo.id, 'typed-while-frozen\r');
      await waitFor(() => states.some((s) => s.state === 'reconnecting'), PAUSE_MS, 'the dead-link verdict');
      const frozenText = outs.map((o) => o.text);
      await new Promise((r) => setTimeout(r, PAUSE_MS - (Date.now() - pausedAt)));
      // Nothing came from the frozen host.
      expect(outs.map((o) => o.text)).toEqual(frozenText);
      docker('unpause', host.container.getId());
      paused = false;
      await typed;
    } finally {
      // Never leave a frozen container behind, whatever failed above.
      if (paused) docker('unpause', host.container.getId());
    }

    await waitFor(() => states.at(-1)?.state === 'connected', 60_000, 'the reconnect');
    await Promise.all(outs.map((o, n) => o.waitText(`w${n} line ${LINES - 1}\r\n`, 60_000)));
    for (const [n, o] of outs.entries()) {
      // Byte-exact: every line once, in order, nothing lost or repeated across the outage.
      expect(o.text).toBe(expectedText(n));
      expect(o.gaps).toEqual([]);
    }
    await echoOut.waitText('typed-while-frozen', 20_000);
    await new Promise((r) => setTimeout(r, 500));
    // cat echoes the line once (tty echo) and prints it once.
    expect(echoOut.text.split('typed-while-frozen').length - 1).toBe(2);
    // The ring held everything: no session was reset to a snapshot or lost.
    expect(reattached).toEqual([]);
    await Promise.all([...writers, echo].map((r) => provider.shutdown(r.id)));
  }, 150_000);
});

/**
 * runc's cgroup freezer can give up on a heavily loaded machine ("unable to freeze") and leaves
 * the container running; trying again a few times is what an operator would do.
 */
function pauseContainer(id: string): void {
  for (let attempt = 1; ; attempt++) {
    try {
      docker('pause', id);
      return;
    } catch (err) {
      if (attempt >= PAUSE_ATTEMPTS) throw err;
      console.warn(`retrying docker pause: ${(err as Error).message}`);
    }
  }
}

/** Runs a docker CLI command; a failure carries docker's own message. */
function docker(...args: string[]): void {
  const r = spawnSync('docker', args, { encoding: 'utf8', timeout: DOCKER_CLI_TIMEOUT_MS });
  if (r.status !== 0) throw new Error(`docker ${args.join(' ')}: ${r.error?.message ?? r.stderr.trim()}`);
}
