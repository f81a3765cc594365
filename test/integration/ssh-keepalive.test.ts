import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveHost } from '../../relay/ssh/host-config.js';
import { connectSsh, type SshConnection } from '../../relay/ssh/host-connection.js';
import { hostFor, relayHome } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();
if (!available) console.warn('skipping SSH keepalive test: /usr/sbin/sshd is not installed');

const INTERVAL_MS = 1200;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** keepalive@openssh.com requests sshd has received so far (it logs each at LogLevel DEBUG1). */
const keepalives = (s: SshdInstance) =>
  (readFileSync(s.logPath, 'utf8').match(/rtype keepalive@openssh\.com/g) ?? []).length;

/**
 * The relay's SSH keepalive follows OpenSSH's ServerAliveInterval: a request only after an
 * interval in which the host sent nothing. While output flows none goes out (a keepalive reply in
 * the middle of typing cost the relay a recompile of its receive path: docs/benchmarks.md).
 */
describe.skipIf(!available)('SSH keepalive only on a silent link', () => {
  let sshd: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  let ssh: SshConnection | undefined;

  beforeAll(async () => {
    home = relayHome();
    sshd = await startSshd({ extraConfig: ['LogLevel DEBUG1'] });
  });
  afterAll(async () => {
    ssh?.close();
    await sshd?.stop();
    home?.cleanup();
  });

  it('sends none while the host talks, and one per interval once it is silent', async () => {
    ssh = await connectSsh(resolveHost(hostFor(sshd, { keepaliveIntervalMs: INTERVAL_MS })));
    const conn = ssh;
    // The host writes a line every 100 ms for five intervals.
    const lines = await new Promise<number>((resolve, reject) => {
      conn.client.exec('for i in $(seq 60); do echo tick; sleep 0.1; done', (err, ch) => {
        if (err) return reject(err);
        let n = 0;
        ch.on('data', (d: Buffer) => (n += (d.toString().match(/tick/g) ?? []).length));
        ch.on('close', () => resolve(n));
      });
    });
    expect(lines).toBe(60);
    const whileTalking = keepalives(sshd);
    expect(whileTalking).toBe(0);

    // Silent now: requests go out again (dead links are still found), and each is answered.
    await sleep(INTERVAL_MS * 4);
    const whileSilent = keepalives(sshd) - whileTalking;
    expect(whileSilent).toBeGreaterThanOrEqual(1);
    // Still connected: the answered requests kept the link.
    const out = await new Promise<string>((resolve, reject) => {
      conn.client.exec('echo alive', (err, ch) => {
        if (err) return reject(err);
        let s = '';
        ch.on('data', (d: Buffer) => (s += d));
        ch.on('close', () => resolve(s.trim()));
      });
    });
    expect(out).toBe('alive');
  });
});
