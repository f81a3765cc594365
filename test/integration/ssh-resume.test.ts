import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import { hostFor, relayHome, remoteRuntimeDir, sshProvider } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();
const ROOT = join(import.meta.dirname, '..', '..');
const FAST = { health: { deadAfterMs: 2000, probeIdleMs: 500 }, ladder: { steps: [100, 200, 400] } };

describe.skipIf(!available)('resume over SSH', () => {
  let sshd: SshdInstance;
  let proxy: FaultProxy;
  let home: ReturnType<typeof relayHome>;
  let dir: string;
  let kh: string;
  const runtimeDir = remoteRuntimeDir('resume');
  const providers: SshPtyProvider[] = [];
  const make = (port: number, relayId?: string) => {
    const p = sshProvider(
      { h: hostFor(sshd, { port, knownHostsFile: kh, connectTimeoutMs: 3000 }) },
      runtimeDir,
      {
        link: FAST,
        relayId,
      },
    );
    providers.push(p);
    return p;
  };

  beforeAll(async () => {
    home = relayHome();
    sshd = await startSshd();
    proxy = await FaultProxy.start({ host: '127.0.0.1', port: sshd.port });
    kh = join(home.home, 'kh');
    writeFileSync(
      kh,
      `[127.0.0.1]:${proxy.port} ${sshd.hostPublicKey}\n[127.0.0.1]:${sshd.port} ${sshd.hostPublicKey}\n`,
    );
    dir = mkdtempSync(join(tmpdir(), 'ptr-resume-'));
    chmodSync(dir, 0o777);
  });
  afterAll(async () => {
    proxy.restore();
    const p = make(sshd.port);
    await p.shutdownDaemon('h').catch(() => {});
    for (const x of providers) await x.dispose();
    await proxy.close();
    await sshd.stop();
    home.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('applies every line typed into `cat > file` exactly once across connection cuts', async () => {
    const p = make(proxy.port);
    const file = join(dir, 'typed.txt');
    const r = await p.spawn({ host: 'h', cols: 80, rows: 24, command: 'sh', args: ['-c', `cat > ${file}`] });
    const exits: number[] = [];
    p.onExit((e) => e.id === r.id && exits.push(e.exitCode));
    const writes: Promise<void>[] = [];
    for (let i = 1; i <= 40; i++) {
      writes.push(p.write(r.id, `line ${i}\r`));
      if (i % 8 === 0) {
        proxy.cut();
        await new Promise((res) => setTimeout(res, 150));
      }
    }
    await Promise.all(writes);
    await p.write(r.id, '\x04');
    await waitFor(() => exits.length > 0, 15_000, 'cat to exit');
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines).toEqual(Array.from({ length: 40 }, (_, i) => `line ${i + 1}`));
  });

  it('two relays attached to one terminal both receive the stream', async () => {
    const a = make(sshd.port, 'relay-a');
    const b = make(sshd.port, 'relay-b');
    const r = await a.spawn({ host: 'h', cols: 80, rows: 24, command: 'cat' });
    const outA = new OutputCollector(a, r.id);
    const outB = new OutputCollector(b);
    await b.attach(r.id, { fromSeq: 0 });
    outB.bind(r.id);
    await a.write(r.id, 'shared-by-two\r');
    await outA.waitText('shared-by-two\r\n');
    await outB.waitText('shared-by-two\r\n');
    await b.write(r.id, 'from-b\r');
    await outA.waitText('from-b\r\n');
    expect(outB.gaps).toEqual([]);
    await a.shutdown(r.id);
  });

  it('leaves no process on the host after its sessions and daemon are shut down', async () => {
    const iso = remoteRuntimeDir('leak');
    const p = sshProvider({ h: hostFor(sshd, { knownHostsFile: kh }) }, iso);
    providers.push(p);
    const pids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await p.spawn({
        host: 'h',
        cols: 80,
        rows: 24,
        command: 'sh',
        args: ['-c', 'sleep 1000 & sleep 1001'],
      });
      pids.push(r.pid);
    }
    const daemonPid = p.linkInfo('h')?.daemonPid;
    expect(daemonPid).toBeGreaterThan(0);
    const sleepers = () =>
      spawnSync('pgrep', ['-u', sshd.user, '-f', '^sleep 100[01]$'], { encoding: 'utf8' }).stdout.trim();
    await waitFor(() => sleepers().split('\n').length >= 6, 5000, 'sleepers');
    await p.shutdown(`h/${(await p.listProcesses())[0].id.split('/')[1]}`);
    await p.shutdownDaemon('h');
    const alive = (pid: number) => spawnSync('kill', ['-0', String(pid)]).status === 0;
    await waitFor(() => !alive(daemonPid!) && pids.every((x) => !alive(x)), 5000, 'daemon and shells to end');
    await waitFor(() => sleepers() === '', 5000, 'children to end');
    const rest = spawnSync('pgrep', ['-u', sshd.user, '-f', iso], { encoding: 'utf8' }).stdout.trim();
    expect(rest).toBe('');
  });

  it('a new relay resumes every session of a SIGKILLed relay exactly', async () => {
    const script = `
      import { SshPtyProvider } from ${JSON.stringify(join(ROOT, 'dist', 'index.js'))};
      const cfg = JSON.parse(process.env.CHILD_CFG);
      const p = new SshPtyProvider(cfg);
      const last = new Map();
      p.onData((e) => last.set(e.id, e.seq + e.data.length));
      const ids = [];
      for (let i = 0; i < 3; i++) {
        const r = await p.spawn({ host: 'h', cols: 80, rows: 24, command: 'sh',
          args: ['-c', 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); echo tick-$i; sleep 0.02; done'] });
        ids.push({ id: r.id, inc: r.incarnationId });
      }
      setInterval(() => process.stdout.write(JSON.stringify(ids.map((x) => ({ ...x, seq: last.get(x.id) ?? 0 }))) + '\\n'), 100);
    `;
    const cfg = {
      hosts: { h: hostFor(sshd, { knownHostsFile: kh }) },
      daemonArgs: ['--runtime-dir', runtimeDir],
      relayId: 'relay-killed',
    };
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, CHILD_CFG: JSON.stringify(cfg), PTYRELAY_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let lastReport: { id: string; inc: string; seq: number }[] = [];
    child.stdout.on('data', (d: Buffer) => {
      const line = d.toString().trim().split('\n').pop();
      if (line) lastReport = JSON.parse(line);
    });
    await waitFor(
      () => lastReport.length === 3 && lastReport.every((x) => x.seq > 200),
      20_000,
      'child output',
    );
    child.kill('SIGKILL');
    await new Promise((res) => child.once('exit', res));
    const seen = lastReport;
    // The new relay takes the same identity, so the killed relay's credit claims pass to it.
    const fresh = make(sshd.port, 'relay-killed');
    for (const s of seen) {
      const out = new OutputCollector(fresh);
      const a = await fresh.attach(s.id, { fromSeq: s.seq, expectedIncarnationId: s.inc });
      out.bind(s.id, a.providerSequence.value);
      expect(a.providerSequence.generation).toBe('continued');
      const replay = Buffer.from(a.replay ?? []).toString();
      const before = replay.match(/tick-(\d+)/);
      // The replay starts exactly where the killed relay stopped: mid-line or at a new tick.
      expect(before).not.toBeNull();
      const ticksReplay = [...replay.matchAll(/tick-(\d+)\r\n/g)].map((m) => Number(m[1]));
      await out.waitText(/tick-\d+\r\n.*tick-\d+\r\n/s, 5000);
      const ticksLive = [...out.text.matchAll(/tick-(\d+)\r\n/g)].map((m) => Number(m[1]));
      const all = [...ticksReplay, ...ticksLive];
      for (let i = 1; i < all.length; i++) expect(all[i]).toBe(all[i - 1] + 1);
      expect(out.gaps).toEqual([]);
      await fresh.shutdown(s.id, { immediate: true });
    }
  });
});
