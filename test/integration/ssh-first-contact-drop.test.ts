import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PtyRelayError } from '../../provider/errors.js';
import { FIRST_CONTACT_DROP_RETRIES } from '../../relay/stub-link/host-link.js';
import { OutputCollector } from '../support/local-daemon.js';
import { type ProxiedHost, startProxiedHost } from '../support/proxied-host.js';
import { sshdAvailable } from '../support/sshd.js';

const available = sshdAvailable();

/**
 * A host that lets us in and then drops the connection during setup (dropbear 2022.83's assertion
 * does, as does a flaky middlebox): first contact tries again instead of failing at once, which
 * it still does for configuration problems (ssh-first-contact.test.ts).
 */
describe.skipIf(!available)('first contact after a drop during setup', () => {
  let fx: ProxiedHost;
  /** Cuts every connection as soon as it has logged in, this many more times. */
  let cutsLeft = 0;
  let cuts = 0;

  beforeAll(async () => {
    fx = await startProxiedHost(
      'dropsetup',
      {},
      {
        onProgress: (_h, p) => {
          if (p.step === 'connected' && cutsLeft > 0) {
            cutsLeft--;
            cuts++;
            fx.proxy.cut();
          }
        },
      },
    );
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it('tries again when the host drops the connection after login, and the terminal works', async () => {
    cutsLeft = 1;
    const out = new OutputCollector(fx.provider);
    const r = await fx.provider.spawn({
      host: 'h',
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'echo after-the-drop; sleep 30'],
    });
    expect(cuts).toBe(1);
    out.bind(r.id);
    if (r.replay) out.chunks.unshift(Buffer.from(r.replay));
    await out.waitText('after-the-drop', 15_000);
    out.stop();
    await fx.provider.shutdown(r.id, { immediate: true });
  }, 60_000);

  it('gives up after a bounded number of drops with LINK_CLOSED naming the cause', async () => {
    await fx.provider.dispose();
    // A fresh provider: a first contact again.
    const { sshProvider, hostFor } = await import('../support/ssh-fixture.js');
    const { join } = await import('node:path');
    const { writeFileSync } = await import('node:fs');
    const kh = join(fx.dir, 'kh');
    writeFileSync(kh, `[127.0.0.1]:${fx.proxy.port} ${fx.sshd.hostPublicKey}\n`);
    cuts = 0;
    cutsLeft = 100;
    const p = sshProvider(
      { h: hostFor(fx.sshd, { port: fx.proxy.port, knownHostsFile: kh }) },
      fx.runtimeDir,
      {
        onProgress: (_h, pr) => {
          if (pr.step === 'connected' && cutsLeft > 0) {
            cutsLeft--;
            cuts++;
            fx.proxy.cut();
          }
        },
      },
    );
    fx.provider = p;
    let err: unknown;
    try {
      await p.spawn({ host: 'h', cols: 80, rows: 24, command: 'true' });
    } catch (e) {
      err = e;
    }
    cutsLeft = 0;
    await p.shutdownDaemon('h').catch((e: unknown) => console.warn('shutdownDaemon', e));
    expect(err).toBeInstanceOf(PtyRelayError);
    expect((err as PtyRelayError).code).toBe('LINK_CLOSED');
    expect((err as PtyRelayError).message).toMatch(/closed the connection during setup, after login/);
    expect(cuts).toBe(1 + FIRST_CONTACT_DROP_RETRIES);
  }, 60_000);
});
