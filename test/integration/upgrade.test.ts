import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { OutputCollector, pidAlive, waitFor } from '../support/local-daemon.js';

/** A relay "of another build": the build id is what the relay and the daemon it starts compute. */
function relayOfBuild(build: string, runtimeDir: string): LocalPtyProvider {
  process.env.PTYRELAY_BUILD_ID = build;
  return new LocalPtyProvider({ runtimeDir });
}

describe('upgrading the relay keeps running terminals', () => {
  const root = mkdtempSync(join(tmpdir(), 'ptr-upgrade-'));
  const runtimeDir = join(root, 'run');
  afterAll(() => {
    delete process.env.PTYRELAY_BUILD_ID;
    rmSync(root, { recursive: true, force: true });
  });

  it('a newer build talks to the old daemon for its sessions, starts its own for new ones, and the old one exits last', async () => {
    const oldRelay = relayOfBuild('build-old', runtimeDir);
    const old = await oldRelay.spawn({ cols: 80, rows: 24, command: 'cat' });
    const oldDaemon = (await oldRelay.daemonInfo()).pid;
    expect((await oldRelay.daemonInfo()).buildId).toBe('build-old');
    await oldRelay.dispose();

    const newRelay = relayOfBuild('build-new', runtimeDir);
    const info = await newRelay.daemonInfo();
    expect(info.buildId).toBe('build-new');
    expect(info.pid).not.toBe(oldDaemon);
    // The old session is listed under the old build's id and still works.
    const listed = await newRelay.listProcesses();
    const legacyId = `local/build-old:${old.id.split('/')[1]}`;
    expect(listed.map((p) => p.id)).toContain(legacyId);
    const out = new OutputCollector(newRelay);
    const a = await newRelay.attach(legacyId, { fromSeq: 0, expectedIncarnationId: old.incarnationId });
    out.bind(legacyId, a.providerSequence.value);
    await newRelay.write(legacyId, 'still-alive\r');
    await out.waitText('still-alive\r\n');
    // New sessions go to the new build's daemon.
    const fresh = await newRelay.spawn({ cols: 80, rows: 24, command: 'cat' });
    expect(fresh.id.includes(':')).toBe(false);
    expect((await newRelay.listProcesses()).map((p) => p.id)).toEqual(
      expect.arrayContaining([legacyId, fresh.id]),
    );
    // When its last session ends, the superseded daemon exits; the new one stays.
    await newRelay.shutdown(legacyId);
    await waitFor(() => !pidAlive(oldDaemon), 10_000, 'the old daemon to exit');
    expect(pidAlive(info.pid)).toBe(true);
    expect((await newRelay.listProcesses()).map((p) => p.id)).toEqual([fresh.id]);
    await newRelay.shutdownDaemon();
    await newRelay.dispose();
  });
});
