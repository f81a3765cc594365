import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { waitFor } from '../support/local-daemon.js';
import { hostFor, relayHome, remoteRuntimeDir, sshProvider } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();

/**
 * A relay adopts a host that runs its stub (at start, on a config reload, when the catalog is
 * looked at) and lets the link go again when the host holds no running terminal. Whatever else
 * used the host meanwhile keeps the link: in CI, `ptyrelay nav def` joined the adoption's
 * connection at a relay's start, and the release closed the link under its language-server
 * request (LINK_CLOSED "stub link closed by the relay").
 */
describe.skipIf(!available)('adoption lets a host go only when nothing else used it', () => {
  let sshd: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  const runtimeDir = remoteRuntimeDir('adopt-release');
  const providers: SshPtyProvider[] = [];
  const make = () => {
    const p = sshProvider({ h: hostFor(sshd) }, runtimeDir);
    providers.push(p);
    return p;
  };

  beforeAll(async () => {
    home = relayHome();
    sshd = await startSshd();
    // The host runs this build's stub and no running terminal: nothing to keep a link for.
    const setup = make();
    const r = await setup.spawn({ host: 'h', cols: 80, rows: 24, command: 'true' });
    await waitFor(
      async () => !(await setup.listProcesses()).some((t) => t.id === r.id && !t.exited),
      10_000,
      'the terminal to exit',
    );
    await setup.dispose();
  });
  afterAll(async () => {
    await make()
      .shutdownDaemon('h')
      .catch(() => {});
    for (const p of providers) await p.dispose();
    await sshd?.stop();
    home?.cleanup();
  });

  it('an adoption nothing else joined lets the host go; the next use connects again', async () => {
    const p = make();
    expect(await p.adopt('h')).toBe(true);
    expect(p.linkState('h').state).toBe('connected');
    expect(await p.releaseIfEmpty('h')).toBe(true);
    expect(p.linkState('h').state).toBe('idle');
    expect((await p.listProcesses()).filter((t) => !t.exited)).toEqual([]);
    expect(p.linkState('h').state).toBe('connected');
  });

  it('a request that joined the adoption keeps the link, and is answered', async () => {
    const p = make();
    const adoption = p.adopt('h');
    // What `ptyrelay nav` asks first: the workspace root of a file on the host.
    const joined = p.lspRoot('h', '/');
    expect(await adoption).toBe(true);
    expect(await p.releaseIfEmpty('h')).toBe(false);
    expect(p.linkState('h').state).toBe('connected');
    expect(await joined).toBeNull();
  });

  it('a request after the adoption and before the release keeps the link too', async () => {
    const p = make();
    expect(await p.adopt('h')).toBe(true);
    expect(await p.lspRoot('h', '/')).toBeNull();
    expect(await p.releaseIfEmpty('h')).toBe(false);
    expect(p.linkState('h').state).toBe('connected');
  });

  it('a listing keeps no link: the release lets it finish, then lets the host go', async () => {
    const p = make();
    const adoption = p.adopt('h');
    const joined = p.listHost('h');
    expect(await adoption).toBe(true);
    const release = p.releaseIfEmpty('h');
    // A listing that starts while the release looks is answered too (on loopback its answer
    // may come with the release's own, so this does not show the wait for it alone).
    const during = p.listHost('h');
    expect(await release).toBe(true);
    expect(p.linkState('h').state).toBe('idle');
    await expect(joined).resolves.toBeInstanceOf(Array);
    await expect(during).resolves.toBeInstanceOf(Array);
  });
});
