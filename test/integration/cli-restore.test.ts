/**
 * A terminal lost with its host, seen through the relay: the AHP catalog lists it as exited, and
 * `ptyrelay attach` shows its saved screen marked as restored, offers a new shell in its cwd and
 * attaches to that shell when the user accepts. The host is the built-in local one; its daemon
 * and PTY are SIGKILLed as a power cut would (test/containers/host-reboot.test.ts reboots a real
 * container).
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { open } from '../support/relay-test-support.js';

const MAIN = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'ptyrelay.js');
const LINES = 30;
const AHP_VERSIONS = ['0.1.0'];

describe('a cold-restored terminal through the relay', { timeout: 120_000 }, () => {
  let fx: RelayFixture;
  let env: NodeJS.ProcessEnv;
  let workDir: string;

  beforeAll(async () => {
    // The daemon the relay starts after the crash reads the same state dir: the test file's, which
    // every daemon of the file inherits.
    fx = await startRelay();
    workDir = join(fx.local.home, 'restore here');
    mkdirSync(workDir);
    env = { ...process.env, PTYRELAY_URL: fx.url, PTYRELAY_TOKEN: TEST_TOKEN, HOME: fx.local.home };
    delete env.PTYRELAY_CLIENT_ID;
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it('is listed as exited in the AHP catalog; attach shows it restored and opens a new shell in its cwd', async () => {
    const client = fx.client();
    const out = new OutputCollector(client);
    const r = await client.spawn({
      host: 'local',
      cols: 80,
      rows: 24,
      cwd: workDir,
      command: 'bash',
      args: ['--norc', '--noprofile'],
    });
    out.bind(r.id, r.providerSequence.value);
    await client.write(r.id, `PS1='$ '; for i in $(seq 1 ${LINES}); do echo "kept-line-$i"; done\r`);
    await out.waitText(`kept-line-${LINES}`);
    const restoreDir = join(fx.local.stateDir, 'restore');
    // Only a renamed record counts: a `.tmp` being written (before its fsync and rename) is lost
    // with the daemon, and the new daemon would have nothing to restore.
    const recordName = `-${r.id.slice(r.id.lastIndexOf('/') + 1)}.json`;
    await waitFor(
      () =>
        readdirSync(restoreDir).some(
          (f) =>
            f.endsWith(recordName) &&
            readFileSync(join(restoreDir, f), 'utf8').includes(`kept-line-${LINES}`),
        ),
      20_000,
      'the record',
    );

    process.kill(fx.local.daemonPid, 'SIGKILL');
    process.kill(r.pid, 'SIGKILL');
    // The relay's link to the host comes back and finds the record: the terminal stays, exited.
    await waitFor(() => fx.registry.find(r.id)?.exitCode === 137, 30_000, 'the registry update');
    const ahp = await open(fx.url, { token: TEST_TOKEN });
    const init = (await ahp.request('initialize', {
      protocolVersions: AHP_VERSIONS,
      clientId: 'ahp-viewer',
    })) as {
      snapshots: { resource: string; state: { terminals: { resource: string; exitCode?: number }[] } }[];
    };
    const root = init.snapshots.find((s) => s.resource === 'ahp-root://');
    const entry = root?.state.terminals.find((t) => t.resource.endsWith(r.id));
    expect(entry).toMatchObject({ exitCode: 137 });
    ahp.ws.close();

    const p = pty.spawn(process.execPath, [MAIN, 'attach', r.id], {
      cols: 80,
      rows: 24,
      env: { ...env, TERM: 'xterm-256color' },
    });
    let text = '';
    let exitCode: number | undefined;
    p.onData((d) => {
      text += d;
    });
    p.onExit((e) => {
      exitCode = e.exitCode;
    });
    const seen = (s: string) => waitFor(() => text.includes(s), 15_000, JSON.stringify(s));
    await seen(`Open a new shell in ${workDir}? [Y/n]`);
    // The saved screen came first, marked as restored.
    expect(text).toContain(`kept-line-${LINES}`);
    expect(text).toContain(`restored: ${r.id} ended with its host`);
    p.write('y');
    await seen('started local/pty-');
    await new Promise((res) => setTimeout(res, 300));
    p.write('echo "at=$(pwd)"\r');
    await seen(`at=${workDir}`);
    p.write('\x1d');
    await waitFor(() => exitCode !== undefined, 10_000, 'the CLI to exit');
    expect(exitCode).toBe(0);
    expect(text).toMatch(/detached from local\/pty-\d+/);
  });
});
