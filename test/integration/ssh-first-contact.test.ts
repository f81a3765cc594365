import { copyFileSync, writeFileSync } from 'node:fs';
import type { LookupFunction } from 'node:net';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PtyRelayError } from '../../provider/errors.js';
import { DEFAULT_CONNECT_TIMEOUT_MS } from '../../relay/ssh/host-config.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { OutputCollector } from '../support/local-daemon.js';
import { hostFor, relayHome, remoteRuntimeDir, sshProvider } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();

/** A loopback port nobody listens on (bound, then closed). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function failure(p: Promise<unknown>): Promise<PtyRelayError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(PtyRelayError);
    return err as PtyRelayError;
  }
  throw new Error('expected a failure');
}

describe.skipIf(!available)('first contact fails fast with the cause', () => {
  let sshd: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  const runtimeDir = remoteRuntimeDir('first');
  const providers: SshPtyProvider[] = [];
  const make = (...args: Parameters<typeof sshProvider>) => {
    const p = sshProvider(...args);
    providers.push(p);
    return p;
  };

  beforeAll(async () => {
    home = relayHome();
    sshd = await startSshd();
  });
  afterAll(async () => {
    const p = make({ h: hostFor(sshd) }, runtimeDir);
    await p.shutdownDaemon('h').catch(() => {});
    for (const x of providers) await x.dispose();
    await sshd.stop();
    home.cleanup();
  });

  it('a closed port answers CONNECT_FAILED (cause refused) well under the connect timeout', async () => {
    const port = await closedPort();
    const p = make({ h: { host: '127.0.0.1', port, useAgent: false } }, runtimeDir);
    const states: string[] = [];
    p.onLinkState((e) => states.push(e.state.state));
    const t0 = Date.now();
    const err = await failure(p.spawn({ host: 'h', cols: 80, rows: 24 }));
    const ms = Date.now() - t0;
    expect(err.code).toBe('CONNECT_FAILED');
    expect(err.details?.cause).toBe('refused');
    expect(err.message).toMatch(/refused/);
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(ms).toBeLessThan(DEFAULT_CONNECT_TIMEOUT_MS / 5);
    // No background ladder for a host that never answered: the link went back to idle.
    expect(states).not.toContain('reconnecting');
    expect(states.at(-1)).toBe('idle');
  });

  it('a name that does not resolve answers cause dns (resolver injected: no query leaves)', async () => {
    const asked: string[] = [];
    const lookup = ((hostname: string, _opts: unknown, cb: (e: Error | null) => void) => {
      asked.push(hostname);
      const e = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
        code: 'ENOTFOUND',
        hostname,
      });
      process.nextTick(() => cb(e));
    }) as unknown as LookupFunction;
    const p = make({ h: { host: 'no-such-host.invalid', port: 22, useAgent: false } }, runtimeDir, {
      lookup,
    });
    const err = await failure(p.spawn({ host: 'h', cols: 80, rows: 24 }));
    expect(asked).toEqual(['no-such-host.invalid']);
    expect(err.code).toBe('CONNECT_FAILED');
    expect(err.details?.cause).toBe('dns');
    expect(err.message).toMatch(/does not resolve/);
  });

  it('AUTH_FAILED names each key tried and why (a missing identity file)', async () => {
    const missing = join(home.home, '.ssh', 'id_missing');
    const p = make({ h: hostFor(sshd, { identityFile: missing }) }, runtimeDir);
    const err = await failure(p.spawn({ host: 'h', cols: 80, rows: 24 }));
    expect(err.code).toBe('AUTH_FAILED');
    expect(err.details?.cause).toBe('auth');
    expect(err.message).toContain(`${missing} (file not found)`);
    expect(err.details?.tried).toEqual([{ method: 'publickey', path: missing, result: 'file not found' }]);
  });

  it('HOSTKEY_UNKNOWN carries the fingerprint and the command that trusts it', async () => {
    const p = make(
      { h: hostFor(sshd, { knownHostsFile: join(home.home, 'empty_known_hosts') }) },
      runtimeDir,
    );
    const err = await failure(p.spawn({ host: 'h', cols: 80, rows: 24 }));
    expect(err.code).toBe('HOSTKEY_UNKNOWN');
    expect(err.details?.presented).toMatch(/^SHA256:/);
    expect(err.message).toContain(String(err.details?.presented));
    expect(err.message).toContain('ptyrelay hosts trust h');
    expect(err.details?.policy).toBe('ask');
  });

  it('expands ~ and %h/%p in the relay config identityFile and knownHostsFile', async () => {
    copyFileSync(sshd.userKeyPath, join(home.home, '.ssh', 'id_t16'));
    writeFileSync(join(home.home, '.ssh', `kh_127.0.0.1_${sshd.port}`), `${sshd.knownHostsLine}\n`);
    const p = make(
      {
        h: hostFor(sshd, {
          identityFile: '~/.ssh/id_t16',
          knownHostsFile: '~/.ssh/kh_%h_%p',
          hostKeyPolicy: 'strict',
        }),
      },
      runtimeDir,
    );
    const out = new OutputCollector(p);
    const r = await p.spawn({ host: 'h', cols: 80, rows: 24, command: 'bash' });
    out.bind(r.id);
    await p.write(r.id, 'echo tilde-$((40+2))\r');
    await out.waitText('tilde-42');
    await p.shutdown(r.id);
  });
});
