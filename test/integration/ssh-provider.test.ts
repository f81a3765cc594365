import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyDataEvent } from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import { hostFor, relayHome, remoteRuntimeDir, sshProvider } from '../support/ssh-fixture.js';
import { generateKey, type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(isPtyRelayError(err)).toBe(true);
    return (err as { code: string }).code;
  }
  return 'no error';
}

describe.skipIf(!available)('SshPtyProvider against a real sshd', () => {
  let sshd: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  const runtimeDir = remoteRuntimeDir('prov');
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

  it('authenticates with a key, deploys the stub and drives a remote shell', async () => {
    const p = make({ h: hostFor(sshd) }, runtimeDir);
    const out = new OutputCollector(p);
    const r = await p.spawn({ host: 'h', cols: 80, rows: 24, command: 'bash' });
    out.bind(r.id);
    expect(r.id).toMatch(/^h\/pty-\d+$/);
    await p.write(r.id, 'echo remote-$(id -un)-$((6*7))\r');
    await out.waitText(`remote-${sshd.user}-42`);
    expect(out.gaps).toEqual([]);
    expect(p.linkInfo('h')?.via).toBe('streamlocal');
    expect((await p.listProcesses()).map((x) => x.id)).toContain(r.id);
    await p.shutdown(r.id);
  });

  it('uploads nothing when the host already holds this build', async () => {
    const p = make({ h: hostFor(sshd) }, runtimeDir);
    await p.listProcesses();
    expect(p.linkInfo('h')?.deploy.uploaded).toBe(false);
    expect(p.linkInfo('h')?.deploy.bytesUploaded).toBe(0);
  });

  it('authenticates through a real ssh-agent', async () => {
    const sock = join(home.home, 'agent.sock');
    const agent = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
    try {
      await waitFor(() => {
        try {
          readFileSync(sock);
        } catch (e) {
          return (e as NodeJS.ErrnoException).code !== 'ENOENT';
        }
        return true;
      });
      execFileSync('ssh-add', [sshd.userKeyPath], {
        env: { ...process.env, SSH_AUTH_SOCK: sock },
        stdio: 'ignore',
      });
      process.env.SSH_AUTH_SOCK = sock;
      const p = make({ h: hostFor(sshd, { identityFile: undefined, useAgent: true }) }, runtimeDir);
      const list = await p.listProcesses();
      expect(Array.isArray(list)).toBe(true);
      expect(p.linkState('h').state).toBe('connected');
    } finally {
      delete process.env.SSH_AUTH_SOCK;
      agent.kill();
    }
  });

  it('authenticates with a passphrase-protected key', async () => {
    const k = generateKey(join(home.home, 'pp_key'), { passphrase: 'correct horse' });
    sshd.authorize(k.publicKeyLine);
    const p = make(
      { h: hostFor(sshd, { identityFile: k.privateKeyPath, passphrase: 'correct horse' }) },
      runtimeDir,
    );
    await p.listProcesses();
    expect(p.linkState('h').state).toBe('connected');
  });

  it('refuses a wrong key with AUTH_FAILED', async () => {
    const k = generateKey(join(home.home, 'stranger_key'));
    const p = make({ h: hostFor(sshd, { identityFile: k.privateKeyPath }) }, runtimeDir);
    expect(await codeOf(p.spawn({ host: 'h', cols: 80, rows: 24 }))).toBe('AUTH_FAILED');
  });

  it('refuses a changed host key with HOSTKEY_MISMATCH naming both fingerprints, and opens no session', async () => {
    const other = generateKey(join(home.home, 'fake_host_key'));
    const kh = join(home.home, 'mismatch_known_hosts');
    const [type, blob] = other.publicKeyLine.split(' ');
    writeFileSync(kh, `[127.0.0.1]:${sshd.port} ${type} ${blob}\n`);
    const p = make({ h: hostFor(sshd, { knownHostsFile: kh }) }, runtimeDir);
    let message = '';
    try {
      await p.spawn({ host: 'h', cols: 80, rows: 24, command: 'sleep', args: ['31337'] });
    } catch (err) {
      expect((err as { code: string }).code).toBe('HOSTKEY_MISMATCH');
      message = (err as Error).message;
    }
    const fps = [...message.matchAll(/SHA256:[A-Za-z0-9+/]+/g)].map((m) => m[0]);
    expect(new Set(fps).size).toBe(2);
    const spawned = spawnSync('pgrep', ['-u', sshd.user, '-f', '^sleep 31337$'], {
      encoding: 'utf8',
    }).stdout.trim();
    expect(spawned).toBe('');
  });

  it('refuses an unknown host key under strict and records it under accept-new', async () => {
    const kh = join(home.home, 'new_known_hosts');
    writeFileSync(kh, '');
    const strict = make({ h: hostFor(sshd, { knownHostsFile: kh }) }, runtimeDir);
    expect(
      await codeOf(strict.listProcesses().then(() => strict.spawn({ host: 'h', cols: 80, rows: 24 }))),
    ).toBe('HOSTKEY_UNKNOWN');
    const lenient = make(
      { h: hostFor(sshd, { knownHostsFile: kh, hostKeyPolicy: 'accept-new' }) },
      runtimeDir,
    );
    await lenient.listProcesses();
    expect(lenient.linkState('h').state).toBe('connected');
    expect(readFileSync(kh, 'utf8')).toContain(
      `[127.0.0.1]:${sshd.port} ${sshd.hostPublicKey.split(' ')[0]}`,
    );
    const again = make({ h: hostFor(sshd, { knownHostsFile: kh }) }, runtimeDir);
    await again.listProcesses();
    expect(again.linkState('h').state).toBe('connected');
  });

  it('runs 50 concurrent PTYs over one connection', async () => {
    const p = make({ h: hostFor(sshd) }, runtimeDir);
    const seen = new Map<string, string>();
    p.onData((e: PtyDataEvent) => seen.set(e.id, (seen.get(e.id) ?? '') + Buffer.from(e.data).toString()));
    const terms = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        p.spawn({
          host: 'h',
          cols: 80,
          rows: 24,
          command: 'sh',
          args: ['-c', `echo term-${i}-ready; exec cat`],
        }),
      ),
    );
    expect(new Set(terms.map((t) => t.id)).size).toBe(50);
    await Promise.all(terms.map((t, i) => p.write(t.id, `ping-${i}\r`)));
    // The tty echoes the input at once, even before `sh` ran its echo; cat's copy comes after both.
    const copies = (i: number, text = '') => text.split(`ping-${i}\r\n`).length - 1;
    await waitFor(
      () =>
        terms.every((t, i) => seen.get(t.id)?.includes(`term-${i}-ready`) && copies(i, seen.get(t.id)) >= 2),
      20_000,
      'every banner, echo and copy',
    );
    for (const [i, t] of terms.entries()) {
      expect(seen.get(t.id)).toContain(`term-${i}-ready`);
      expect(copies(i, seen.get(t.id))).toBe(2);
    }
    await Promise.all(terms.map((t) => p.shutdown(t.id, { immediate: true })));
  });

  it('keeps sessions across a dropped SSH connection and a new relay process view (exact replay)', async () => {
    const p = make({ h: hostFor(sshd) }, runtimeDir, { link: { ladder: { steps: [100, 200] } } });
    const out = new OutputCollector(p);
    const r = await p.spawn({ host: 'h', cols: 80, rows: 24, command: 'cat' });
    out.bind(r.id);
    await p.write(r.id, 'first\r');
    await out.waitText('first\r\n');
    const mark = out.nextSeq;
    p.dropConnection('h');
    await p.write(r.id, 'during\r');
    // The tty echo and cat's copy: exactly two, never a resent third.
    await waitFor(() => out.text.split('during\r\n').length - 1 >= 2, 10_000, 'echo and copy');
    await p.write(r.id, 'sync\r');
    await waitFor(() => out.text.split('sync\r\n').length - 1 >= 2, 10_000, 'sync');
    expect(out.gaps).toEqual([]);
    expect(out.text.split('during\r\n').length - 1).toBe(2);
    // A fresh provider (as after a relay restart) attaches from the seq it kept.
    const fresh = make({ h: hostFor(sshd) }, runtimeDir);
    const a = await fresh.attach(r.id, { fromSeq: mark, expectedIncarnationId: r.incarnationId });
    expect(a.providerSequence.generation).toBe('continued');
    expect(Buffer.from(a.replay ?? []).toString()).toBe(
      out.bytes.subarray(mark, a.providerSequence.value).toString(),
    );
    expect(Buffer.from(a.replay ?? []).toString()).toContain('during');
    await p.shutdown(r.id);
  });
});

describe.skipIf(!available)('SSH topologies', () => {
  let a: SshdInstance;
  let b: SshdInstance;
  let noStream: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  const runtimeDir = remoteRuntimeDir('topo');
  beforeAll(async () => {
    home = relayHome();
    [a, b, noStream] = await Promise.all([
      startSshd(),
      startSshd(),
      startSshd({ allowStreamLocalForwarding: false }),
    ]);
  });
  afterAll(async () => {
    const p = sshProvider({ a: hostFor(a) }, runtimeDir);
    await p.shutdownDaemon('a').catch(() => {});
    await p.dispose();
    await Promise.all([a.stop(), b.stop(), noStream.stop()]);
    home.cleanup();
  });

  it('falls back to the exec bridge when streamlocal forwarding is disallowed', async () => {
    const p = sshProvider({ n: hostFor(noStream) }, runtimeDir);
    const out = new OutputCollector(p);
    const r = await p.spawn({ host: 'n', cols: 80, rows: 24, command: 'cat' });
    out.bind(r.id);
    expect(p.linkInfo('n')?.via).toBe('exec');
    await p.write(r.id, 'bridged\r');
    await out.waitText('bridged\r\n');
    await p.shutdown(r.id);
    await p.dispose();
  });

  it('drives two hosts at once', async () => {
    const p = sshProvider({ a: hostFor(a), b: hostFor(b) }, runtimeDir);
    const ra = await p.spawn({
      host: 'a',
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'echo on-a; exec cat'],
    });
    const rb = await p.spawn({
      host: 'b',
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'echo on-b; exec cat'],
    });
    expect(ra.id.startsWith('a/')).toBe(true);
    expect(rb.id.startsWith('b/')).toBe(true);
    const hosts = new Set((await p.listProcesses()).map((x) => x.host));
    expect(hosts).toEqual(new Set(['a', 'b']));
    await p.shutdown(ra.id);
    await p.shutdown(rb.id);
    await p.dispose();
  });

  it('connects through a ProxyJump host', async () => {
    const p = sshProvider({ jump: hostFor(a), target: hostFor(b, { proxyJump: 'jump' }) }, runtimeDir);
    const accepted = (path: string) => readFileSync(path, 'utf8').split('Accepted publickey').length - 1;
    const [jumpBefore, targetBefore] = [accepted(a.logPath), accepted(b.logPath)];
    const out = new OutputCollector(p);
    const r = await p.spawn({
      host: 'target',
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'echo via-jump; exec cat'],
    });
    out.bind(r.id);
    await out.waitText('via-jump');
    // One login on the jump host carried the login on the target.
    expect(accepted(a.logPath)).toBe(jumpBefore + 1);
    expect(accepted(b.logPath)).toBe(targetBefore + 1);
    await p.shutdown(r.id);
    await p.dispose();
  });
});
