/**
 * Containerized build machines (Debian bookworm, its own Node 18, nothing of ptyrelay installed):
 * the relay deploys its stub to a host that never saw it, drives three hosts at once from one
 * provider, and reports NODE_MISSING for a host without node. The hosts are shared by the tests of
 * this file and stopped at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPtyRelayError } from '../../provider/errors.js';
import { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { OutputCollector } from '../support/local-daemon.js';
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
reportSkip('hosts', engine);
const HOSTS = ['build1', 'build2', 'build3'] as const;
/** First contact includes uploading the stub (≈ 1 MiB + node-pty) over SSH into a fresh container. */
const FIRST_CONTACT_MS = 60_000;

describe.skipIf(!engine.ok)('containerized hosts', () => {
  let key: RelayKey;
  let home: { cleanup(): void };
  const hosts = new Map<string, HostContainer>();
  let bare: HostContainer;
  let provider: SshPtyProvider;

  beforeAll(async () => {
    if (!engine.ok) return;
    home = relayHome();
    key = makeRelayKey();
    const started = await Promise.all([
      ...HOSTS.map((h) => startHost(engine.images.host, key, h)),
      startHost(engine.images.nonode, key, 'bare'),
    ]);
    for (const [i, h] of HOSTS.entries()) hosts.set(h, started[i]!);
    bare = started[HOSTS.length]!;
    // Each machine knows its own name, so a terminal can prove where it runs.
    await Promise.all(HOSTS.map((h) => hosts.get(h)!.run(`echo ${h}-machine > "$HOME/machine-name"`)));
    provider = new SshPtyProvider({
      hosts: {
        ...Object.fromEntries(HOSTS.map((h) => [h, hosts.get(h)!.ssh])),
        bare: bare.ssh,
      },
      daemonArgs: ['--runtime-dir', REMOTE_RUNTIME_DIR],
    });
  }, 120_000);

  afterAll(async () => {
    await provider?.dispose();
    await Promise.all([...hosts.values(), bare].filter(Boolean).map((h) => h.stop()));
    key?.cleanup();
    home?.cleanup();
  }, 60_000);

  it(
    'deploys the stub to a fresh host and runs a terminal on its own Node 18',
    async () => {
      const h = hosts.get('build1')!;
      // Nothing of ptyrelay on the machine before first contact.
      expect(await h.run('ls -A "$HOME/.cache" 2>/dev/null | grep -c ptyrelay || true')).toBe('0\n');
      expect(await h.run('node --version')).toMatch(/^v18\./);
      const out = new OutputCollector(provider);
      const r = await provider.spawn({ host: 'build1', cols: 100, rows: 30, command: 'bash' });
      out.bind(r.id, r.providerSequence.value);
      expect(r.id).toMatch(/^build1\/pty-\d+$/);
      await provider.write(r.id, 'echo "node=$(node --version) on $(cat ~/machine-name)"\r');
      await out.waitText(/node=v18\.\d+\.\d+ on build1-machine/, 20_000);
      // The install is whole: a verified bundle dir with its completion marker, and the daemon
      // that serves the terminal runs on the host's node 18.
      const installed = await h.run('ls "$HOME"/.cache/ptyrelay/stub-*/.complete');
      expect(installed.trim().split('\n')).toHaveLength(1);
      const daemon = await h.run('ps -o args= -C node');
      expect(daemon).toMatch(/stub\.cjs daemon/);
      expect(out.gaps).toEqual([]);
      await provider.shutdown(r.id);
    },
    FIRST_CONTACT_MS,
  );

  it(
    'drives terminals on three hosts at once from one relay',
    async () => {
      const outs = HOSTS.map(() => new OutputCollector(provider));
      const spawned = await Promise.all(
        HOSTS.map((host) => provider.spawn({ host, cols: 80, rows: 24, command: 'bash' })),
      );
      for (const [i, r] of spawned.entries()) outs[i]!.bind(r.id, r.providerSequence.value);
      await Promise.all(spawned.map((r) => provider.write(r.id, 'echo "on=$(cat ~/machine-name) pid=$$"\r')));
      const seen = await Promise.all(outs.map((o, i) => o.waitText(`on=${HOSTS[i]}-machine`, 30_000)));
      seen.forEach((text, i) => {
        // Each terminal runs on its own machine and on none of the others.
        for (const other of HOSTS) if (other !== HOSTS[i]) expect(text).not.toContain(`on=${other}-machine`);
      });
      for (const [i, host] of HOSTS.entries()) {
        const procs = await hosts.get(host)!.run('ps -o pid= -C bash');
        expect(procs.trim().split(/\s+/).map(Number)).toContain(spawned[i]!.pid);
      }
      await Promise.all(spawned.map((r) => provider.shutdown(r.id)));
    },
    FIRST_CONTACT_MS * 2,
  );

  it('reports NODE_MISSING for a host without node, without retrying', async () => {
    expect(await bare.run('command -v node || echo none')).toBe('none\n');
    const started = Date.now();
    const err = await provider.spawn({ host: 'bare', cols: 80, rows: 24 }).catch((e: unknown) => e);
    expect(isPtyRelayError(err, 'NODE_MISSING'), String(err)).toBe(true);
    expect((err as Error).message).toMatch(/Install Node\.js >= 18/);
    // A non-retryable cause ends the request at once instead of climbing the reconnect ladder.
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 30_000);
});
