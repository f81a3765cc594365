import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectOrStartDaemon } from '../../provider/daemon-runtime/daemon-launcher.js';
import { isPtyRelayError, type PtyRelayError } from '../../provider/errors.js';
import { describeLink } from '../../relay/cli/relay-connect.js';
import { stubBundlePath } from '../../relay/core/stub-bundle.js';
import type { DeployProgress } from '../../relay/deploy/stub-deployer.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { daemonsOf } from '../support/daemon-reaper.js';
import { hostFor, relayHome, remoteRuntimeDir, sshProvider } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';
import { buildStub, type StubBuild } from '../support/stub-builds.js';

/** What a node that refuses the daemon's command line says (Node 22+ of the old V8 flags). */
const BAD_OPTION = 'node: bad option: --interrupt-budget=8192';
/** A failed start is reported as soon as the process exits, not after the launcher's 10 s wait. */
const FAIL_FAST_MS = 5000;
/** Over SSH the whole spawn (connect, probe, upload, ensure) stays well under the 10 s wait plus. */
const SSH_SPAWN_MAX_MS = 8000;
/** Of which the part after the deploy (ensure of a daemon that exits at once). */
const SSH_AFTER_DEPLOY_MAX_MS = 5000;
const RUN = `${process.pid}-${Date.now()}`;

/** The rejection of `p` (fails the test when it resolves). */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e,
  );
}

/** Live processes (not zombies) whose command line mentions `text`. */
function processesMentioning(text: string): number[] {
  return readdirSync('/proc').flatMap((name) => {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) return [];
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return [];
      return readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(text) ? [Number(name)] : [];
    } catch {
      return [];
    }
  });
}

describe('a daemon whose node refuses its command line fails fast with DAEMON_START_FAILED', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'ptr-daemon-start-'));
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('locally: the node exits at once with its complaint; the error carries it, the node, and comes in < 5 s', async () => {
    const node = join(root, 'node');
    writeFileSync(node, `#!/bin/sh\necho "${BAD_OPTION}" >&2\nexit 9\n`, { mode: 0o755 });
    const runtimeDir = join(root, 'run');
    const t0 = Date.now();
    const err = await rejection(connectOrStartDaemon(stubBundlePath(), runtimeDir, [], node));
    const ms = Date.now() - t0;
    expect(isPtyRelayError(err, 'DAEMON_START_FAILED'), String(err)).toBe(true);
    const e = err as PtyRelayError;
    expect(e.message).toContain('bad option: --interrupt-budget=8192');
    expect(e.message).toContain('exited with status 9');
    expect(String(e.details?.stderr)).toContain(BAD_OPTION);
    expect(e.details?.node).toBe(node);
    expect(e.details?.exitCode).toBe(9);
    expect(e.retryable).toBe(false);
    expect(ms).toBeLessThan(FAIL_FAST_MS);
    // Nothing of it is left running.
    expect(daemonsOf(runtimeDir)).toEqual([]);
  });

  it('locally: a second failed start reports its own stderr, not the log lines of the first', async () => {
    const node = join(root, 'node2');
    writeFileSync(node, '#!/bin/sh\necho "node: second complaint" >&2\nexit 3\n', { mode: 0o755 });
    // The same runtime dir (and daemon log) as the test above.
    const err = await rejection(connectOrStartDaemon(stubBundlePath(), join(root, 'run'), [], node));
    expect(isPtyRelayError(err, 'DAEMON_START_FAILED'), String(err)).toBe(true);
    const e = err as PtyRelayError;
    expect(e.message).toContain('node: second complaint');
    expect(String(e.details?.stderr)).not.toContain(BAD_OPTION);
    expect(e.details?.node).toBe(node);
  });
});

const sshd = sshdAvailable();

describe.skipIf(!sshd)(
  'over SSH: the host daemon exits at once; spawn rejects with the host’s typed error',
  {
    timeout: 60_000,
  },
  () => {
    let server: SshdInstance;
    let home: ReturnType<typeof relayHome>;
    let work: string;
    let bad: StubBuild;
    const runtimeDir = remoteRuntimeDir('start-failure');
    /** The host's install base: this run's, so the bad build's install dir goes with it. */
    const installDir = remoteRuntimeDir('start-failure-install');
    const providers: SshPtyProvider[] = [];

    beforeAll(async () => {
      home = relayHome();
      work = mkdtempSync(join(tmpdir(), 'ptr-start-failure-stub-'));
      [bad, server] = await Promise.all([
        buildStub(
          work,
          `bad-option-${RUN}`,
          `if (process.argv[2] === 'daemon') { process.stderr.write(${JSON.stringify(`${BAD_OPTION}\n`)}); process.exit(9); }`,
        ),
        startSshd(),
      ]);
    });
    afterAll(async () => {
      for (const p of providers) await p.dispose();
      await server?.stop();
      home?.cleanup();
      if (work) rmSync(work, { recursive: true, force: true });
    });

    it('deploys the build, `ensure` reports DAEMON_START_FAILED with the node’s stderr, within 8 s', async () => {
      let deployedAt: number | undefined;
      const p = sshProvider({ h: hostFor(server, { installDir }) }, runtimeDir, {
        stubPath: bad.path,
        onProgress: (_host, ev) => {
          if ((ev as DeployProgress).step === 'done') deployedAt = Date.now();
        },
      });
      providers.push(p);
      const t0 = Date.now();
      const err = await rejection(p.spawn({ host: 'h', cols: 80, rows: 24 }));
      const end = Date.now();
      expect(isPtyRelayError(err, 'DAEMON_START_FAILED'), String(err)).toBe(true);
      const e = err as PtyRelayError;
      expect(e.message).toContain(BAD_OPTION);
      expect(String(e.details?.stderr)).toContain(BAD_OPTION);
      // The host's own node ran the bad build (the probe's choice), and the stub is the one deployed.
      expect(String(e.details?.node)).toMatch(/\/node$/);
      expect(end - t0).toBeLessThan(SSH_SPAWN_MAX_MS);
      expect(deployedAt, 'the deploy finished before the start failed').toBeDefined();
      expect(end - deployedAt!).toBeLessThan(SSH_AFTER_DEPLOY_MAX_MS);
      // No daemon of it runs on the host, and the relay does not keep retrying in the background.
      expect(processesMentioning(runtimeDir)).toEqual([]);
      // What `ptyrelay hosts` prints for the host (relay/cli/relay-connect.ts): the failure's code
      // and its first stderr line, and the next attempt no sooner than the deploy backoff's 30 s.
      const state = p.linkState('h');
      expect(state.state).toBe('deploy-failed');
      if (state.state !== 'deploy-failed') return;
      expect(state.code).toBe('DAEMON_START_FAILED');
      expect(state.reason).toContain(BAD_OPTION);
      expect(state.nextAttemptAt - end).toBeGreaterThan(25_000);
      expect(describeLink(state)).toContain(
        `deploy-failed (DAEMON_START_FAILED, attempt 1): the stub daemon did not start`,
      );
    });
  },
);
