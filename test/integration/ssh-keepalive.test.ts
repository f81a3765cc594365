import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveHost } from '../../relay/ssh/host-config.js';
import { connectSsh, type SshConnection } from '../../relay/ssh/host-connection.js';
import { hostFor, relayHome } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();

const INTERVAL_MS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** keepalive@openssh.com requests sshd has received so far (it logs each at LogLevel DEBUG1). */
const keepalives = (s: SshdInstance) =>
  (readFileSync(s.logPath, 'utf8').match(/rtype keepalive@openssh\.com/g) ?? []).length;

/** Runs `echo alive` on the connection: the link still works. */
function alive(conn: SshConnection): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    conn.client.exec('echo alive', (err, ch) => {
      if (err) return reject(err);
      let s = '';
      ch.on('data', (d: Buffer) => (s += d));
      ch.on('close', () => resolve(s.trim()));
    });
  });
}

/**
 * The relay's SSH keepalive is ssh2's own, and runs only when asked for (the host's
 * keepaliveIntervalMs or ServerAliveInterval), as OpenSSH's: the relay's link-health probes find
 * dead links without it.
 */
describe.skipIf(!available)('SSH keepalive only when configured', () => {
  let sshd: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  const open: SshConnection[] = [];

  beforeAll(async () => {
    home = relayHome();
    sshd = await startSshd({ extraConfig: ['LogLevel DEBUG1'] });
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await sshd?.stop();
    home?.cleanup();
  });

  it('sends none by default', async () => {
    const h = resolveHost(hostFor(sshd));
    expect(h.keepaliveIntervalMs).toBe(0);
    const before = keepalives(sshd);
    const conn = await connectSsh(h);
    open.push(conn);
    await sleep(INTERVAL_MS * 3);
    expect(keepalives(sshd) - before).toBe(0);
    expect(await alive(conn)).toBe('alive');
    conn.close();
  });

  it('sends requests at the configured interval, and each is answered', async () => {
    const before = keepalives(sshd);
    const conn = await connectSsh(resolveHost(hostFor(sshd, { keepaliveIntervalMs: INTERVAL_MS })));
    open.push(conn);
    await sleep(INTERVAL_MS * 3.5);
    expect(keepalives(sshd) - before).toBeGreaterThanOrEqual(2);
    expect(await alive(conn)).toBe('alive');
  });
});
