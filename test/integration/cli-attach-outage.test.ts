import { execFile, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { allOf, rootAvailable } from '../support/capabilities.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { hostFor, relayHome } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = allOf(sshdAvailable(), rootAvailable('a throwaway login user'));

const MAIN = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'ptyrelay.js');
/** A login user of this file's own (its daemon is nobody else's); removed after. */
const USER = 'ptyrelay-t16-attach';

function cli(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe.skipIf(!available)('attach during an SSH outage', { timeout: 120_000 }, () => {
  let sshd: SshdInstance;
  let proxy: FaultProxy;
  let fx: RelayFixture;
  let home: ReturnType<typeof relayHome>;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    home = relayHome();
    sshd = await startSshd({ user: USER });
    proxy = await FaultProxy.start({ host: '127.0.0.1', port: sshd.port });
    const kh = join(home.home, 'proxy_known_hosts');
    writeFileSync(kh, `[127.0.0.1]:${proxy.port} ${sshd.hostPublicKey}\n`);
    fx = await startRelay({
      config: { hosts: { box: hostFor(sshd, { port: proxy.port, knownHostsFile: kh }) } },
    });
    env = { ...process.env, PTYRELAY_URL: fx.url, PTYRELAY_TOKEN: TEST_TOKEN, HOME: fx.local.home };
    delete env.PTYRELAY_CLIENT_ID;
  });
  afterAll(async () => {
    proxy?.restore();
    await (fx?.router.providerFor('box') as SshPtyProvider | undefined)
      ?.shutdownDaemon('box')
      .catch(() => {});
    await fx?.cleanup();
    await proxy?.close();
    await sshd?.stop();
    home?.cleanup();
    spawnSync('userdel', ['-r', USER], { stdio: 'ignore' });
  });

  it('shows the cause, and lines typed before Ctrl-] are not run when the host returns', async () => {
    const opened = await cli(['open', 'box', '--', 'bash', '--norc', '--noprofile'], env);
    expect(opened.code, opened.stderr).toBe(0);
    const id = opened.stdout.trim();
    const p = pty.spawn(process.execPath, [MAIN, 'attach', id], { cols: 120, rows: 30, env, name: 'xterm' });
    let out = '';
    let code: number | undefined;
    p.onData((d) => {
      out += d;
    });
    p.onExit((e) => {
      code = e.exitCode;
    });
    try {
      await waitFor(() => out.length > 0, 20_000, 'the attach to paint');
      p.write('echo ready-$((1+1))\r');
      await waitFor(() => out.includes('ready-2'), 20_000, 'the shell to answer');

      proxy.refuse(true);
      proxy.cut();
      await waitFor(
        () => /host box unreachable \(sshd gone\)/.test(out),
        20_000,
        'the status line with the cause',
      );
      expect(out).toMatch(/host box unreachable \(sshd gone\), next attempt in \d+\.\d s \(attempt \d+\)/);
      p.write('echo stale-$((5*7))\r');
      await new Promise((r) => setTimeout(r, 300));
      p.write('\x1d');
      await waitFor(() => code !== undefined, 20_000, 'the attach to end');
    } finally {
      if (code === undefined) p.kill();
    }
    expect(code).toBe(0);
    expect(out).toContain(`detached from ${id}`);
    expect(out).toMatch(/20 bytes typed during the outage were not sent/);

    proxy.restore();
    const marker = await cli(['send', id, 'echo marker-$((2*2))'], env);
    expect(marker.code, marker.stderr).toBe(0);
    let screen = '';
    await waitFor(
      async () => {
        screen = (await cli(['read', id], env)).stdout;
        return screen.includes('marker-4');
      },
      30_000,
      'the marker on the screen',
    );
    expect(screen).toContain('ready-2');
    expect(screen).not.toContain('stale-35');
    await cli(['kill', id, '--now'], env);
  });
});
