import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostProgress } from '../../provider/client/relay-protocol.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { hostFor, relayHome } from '../support/ssh-fixture.js';
import { type SshdInstance, startSshd } from '../support/sshd.js';

const MAIN = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'ptyrelay.js');

function cli(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('reaching an SSH host through the relay shows each step', { timeout: 90_000 }, () => {
  let sshd: SshdInstance;
  let fx: RelayFixture;
  let home: ReturnType<typeof relayHome>;
  let env: NodeJS.ProcessEnv;
  let fresh = false;
  beforeAll(async () => {
    home = relayHome();
    // A user of its own: its daemon and stub install are this file's alone.
    sshd = await startSshd({ user: 'ptyrelay-cli' });
    // A fresh install, so the upload steps show too (only for a dedicated test account: without
    // root the harness logs in as the developer, whose stub cache stays alone).
    fresh = sshd.user !== userInfo().username;
    if (fresh) rmSync(join(sshd.userHome, '.cache', 'ptyrelay'), { recursive: true, force: true });
    fx = await startRelay({ config: { hosts: { box: hostFor(sshd) } } });
    env = { ...process.env, PTYRELAY_URL: fx.url, PTYRELAY_TOKEN: TEST_TOKEN, HOME: fx.local.home };
    delete env.PTYRELAY_CLIENT_ID;
  });
  afterAll(async () => {
    await (fx?.router.providerFor('box') as SshPtyProvider | undefined)
      ?.shutdownDaemon('box')
      .catch(() => {});
    await fx?.cleanup();
    await sshd?.stop();
    home?.cleanup();
  });

  it('`open` on a host prints connect and deploy progress on stderr; clients get the same events', async () => {
    const watcher = fx.client({ clientId: 'watcher' });
    const seen: HostProgress[] = [];
    watcher.onHostProgress((p) => seen.push(p));
    await watcher.connect();
    const r = await cli(['open', 'box', '--', 'sh', '-c', 'echo on-the-box; exec sleep 60'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/host box: connecting to ptyrelay-cli@127\.0\.0\.1:\d+/);
    expect(r.stderr).toMatch(/host box: connected in \d+ ms/);
    expect(r.stderr).toMatch(
      fresh
        ? /host box: stub installed \(\d+ bytes uploaded\) in \d+ ms/
        : /host box: stub (installed|already)/,
    );
    expect(r.stderr).toMatch(/host box: stub link up via (streamlocal|exec)/);
    const steps = seen.filter((p) => p.host === 'box').map((p) => p.step);
    expect(steps[0]).toBe('connect');
    if (fresh) expect(steps).toContain('upload');
    expect(steps.at(-1)).toBe('link');
    const id = r.stdout.trim().split(/\s+/)[0];
    expect(id).toMatch(/^box\//);
    expect((await cli(['kill', id, '--now'], env)).code).toBe(0);
  });
});
