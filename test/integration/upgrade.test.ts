import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { OutputCollector, pidAlive, waitFor } from '../support/local-daemon.js';

/** A relay "of another build": the build id is what the relay and the daemon it starts compute. */
function relayOfBuild(build: string, runtimeDir: string, stateDir: string): LocalPtyProvider {
  process.env.PTYRELAY_BUILD_ID = build;
  return new LocalPtyProvider({ runtimeDir, daemonArgs: ['--state-dir', stateDir] });
}

describe('upgrading the relay keeps running terminals', () => {
  const root = mkdtempSync(join(tmpdir(), 'ptr-upgrade-'));
  const runtimeDir = join(root, 'run');
  const stateDir = join(root, 'state');
  afterAll(() => {
    delete process.env.PTYRELAY_BUILD_ID;
    rmSync(root, { recursive: true, force: true });
  });

  it('a newer build talks to the old daemon for its sessions under their ids, starts its own for new ones, and the old one exits last', async () => {
    const oldRelay = relayOfBuild('build-old', runtimeDir, stateDir);
    const old = await oldRelay.spawn({ cols: 80, rows: 24, command: 'cat' });
    const oldDaemon = (await oldRelay.daemonInfo()).pid;
    expect((await oldRelay.daemonInfo()).buildId).toBe('build-old');
    await oldRelay.dispose();

    const newRelay = relayOfBuild('build-new', runtimeDir, stateDir);
    const info = await newRelay.daemonInfo();
    expect(info.buildId).toBe('build-new');
    expect(info.pid).not.toBe(oldDaemon);
    // The old session is listed under the id it was spawned with and still works.
    const listed = await newRelay.listProcesses();
    expect(listed.map((p) => p.id)).toContain(old.id);
    const out = new OutputCollector(newRelay);
    const a = await newRelay.attach(old.id, { fromSeq: 0, expectedIncarnationId: old.incarnationId });
    expect(a.id).toBe(old.id);
    out.bind(old.id, a.providerSequence.value);
    await newRelay.write(old.id, 'still-alive\r');
    await out.waitText('still-alive\r\n');
    // New sessions go to the new build's daemon, under an id no daemon handed out before.
    const fresh = await newRelay.spawn({ cols: 80, rows: 24, command: 'cat' });
    expect(fresh.id).not.toBe(old.id);
    expect(fresh.id.includes(':')).toBe(false);
    expect(fresh.pid).not.toBe(old.pid);
    expect((await newRelay.listProcesses()).map((p) => p.id)).toEqual(
      expect.arrayContaining([old.id, fresh.id]),
    );
    // When its last session ends, the superseded daemon exits; the new one stays.
    await newRelay.shutdown(old.id);
    await waitFor(() => !pidAlive(oldDaemon), 10_000, 'the old daemon to exit');
    expect(pidAlive(info.pid)).toBe(true);
    expect((await newRelay.listProcesses()).map((p) => p.id)).toEqual([fresh.id]);
    await newRelay.shutdownDaemon();
    await newRelay.dispose();
  });

  it('a relay that never saw a terminal reaches it in an older daemon by its id alone', async () => {
    const oldRelay = relayOfBuild('build-a', runtimeDir, stateDir);
    const old = await oldRelay.spawn({ cols: 80, rows: 24, command: 'cat' });
    const oldDaemon = (await oldRelay.daemonInfo()).pid;
    const before = new OutputCollector(oldRelay, old.id);
    await oldRelay.write(old.id, 'before\r');
    // The tty's echo, then cat's copy.
    await before.waitText('before\r\nbefore\r\n');
    await oldRelay.dispose();

    const newRelay = relayOfBuild('build-b', runtimeDir, stateDir);
    // No listing first: attach and write find the old daemon's terminal by its id.
    const out = new OutputCollector(newRelay);
    const a = await newRelay.attach(old.id, { fromSeq: 0, expectedIncarnationId: old.incarnationId });
    expect(a.incarnationId).toBe(old.incarnationId);
    expect(Buffer.from(a.replay ?? []).toString()).toBe(before.text);
    out.bind(old.id, a.providerSequence.value);
    await newRelay.write(old.id, 'after\r');
    await out.waitText('after\r\n');
    await newRelay.shutdown(old.id);
    await waitFor(() => !pidAlive(oldDaemon), 10_000, 'the old daemon to exit');
    await newRelay.shutdownDaemon();
    await newRelay.dispose();
  });
});
