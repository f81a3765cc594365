import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { cliInPty } from '../support/cli-runner.js';
import { waitFor } from '../support/local-daemon.js';

const root = mkdtempSync(join(tmpdir(), 'ptr-cli-'));
const runtimeDir = join(root, 'run');
const home = join(root, 'home');
mkdirSync(home);
writeFileSync(join(home, '.bashrc'), 'PS1="cli-prompt$ "\n');
writeFileSync(join(home, '.bash_profile'), '. ~/.bashrc\n');

/** Runs `ptyrelay shell` in a real PTY, like a user at a terminal. */
function runCli() {
  const env = { ...process.env, HOME: home, SHELL: '/bin/bash', PTYRELAY_RUNTIME_DIR: runtimeDir };
  return cliInPty(['shell'], env, { cols: 100, rows: 30 }, home);
}

describe('ptyrelay shell (npm start)', () => {
  afterAll(async () => {
    const provider = new LocalPtyProvider({ runtimeDir });
    await provider.shutdownDaemon().catch(() => {});
    await provider.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  it('opens a shell, detaches with Ctrl-], and reattaches to the same shell with its screen', async () => {
    const first = runCli();
    await first.wait('cli-prompt$ ');
    first.p.write('echo marker-$((40+2)); echo $$ > shellpid\r');
    await first.wait('marker-42');
    first.p.write('\x1d');
    await waitFor(() => first.exited() !== undefined, 5000, 'detach');
    expect(first.exited()).toBe(0);
    expect(first.text()).toContain('detached from local/pty-');

    const second = runCli();
    await second.wait('reattached to local/pty-');
    // The screen comes back from the snapshot: the earlier output is visible again.
    await second.wait('marker-42');
    second.p.write('echo again-$(cat shellpid)-$$\r');
    await waitFor(() => /again-(\d+)-\1/.test(second.text()), 10_000, 'same shell pid');
    second.p.write('exit\r');
    await waitFor(() => second.exited() !== undefined, 5000, 'exit');
    expect(second.text()).toContain('exited');
  });
});
