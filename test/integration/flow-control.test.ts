import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyBackgroundStreamEvent, PtyFactEvent } from '../../provider/contract.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { type LocalFixture, OutputCollector, startLocal, waitFor } from '../support/local-daemon.js';
import { expectedStream, writeGenerator } from '../support/stream-generator.js';

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('credit flow control', () => {
  let fx: LocalFixture;
  let dir: string;
  beforeAll(async () => {
    fx = await startLocal();
    dir = mkdtempSync(join(tmpdir(), 'ptr-flow-'));
    chmodSync(dir, 0o755);
  });
  afterAll(async () => {
    await fx.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('pauses the producer for a consumer that never acknowledges; memory stays flat', async () => {
    const p = new LocalPtyProvider({ runtimeDir: fx.runtimeDir, link: { manualAck: true } });
    const progress = join(dir, 'progress');
    let received = 0;
    p.onData(() => {
      received += 1;
    });
    const r = await p.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', `i=0; while :; do i=$((i+1)); printf '%0500d\\n' $i; echo $i > ${progress}; done`],
    });
    const counter = () => {
      try {
        return Number(readFileSync(progress, 'utf8').trim() || 0);
      } catch {
        return 0;
      }
    };
    // Paused once the counter stops moving (about one 256 KiB window of 501-byte lines).
    let last = -1;
    await waitFor(
      async () => {
        const now = counter();
        const still = now === last && now > 0;
        last = now;
        await sleep(300);
        return still;
      },
      15_000,
      'the writer to block',
    );
    const c1 = counter();
    const rss1 = { stub: rssKb(fx.daemonPid), relay: process.memoryUsage().rss };
    await sleep(10_000);
    const c2 = counter();
    const rss2 = { stub: rssKb(fx.daemonPid), relay: process.memoryUsage().rss };
    // The writer is blocked in the kernel: its progress stopped at about one window of output.
    expect(c2 - c1).toBeLessThanOrEqual(1);
    expect(c1).toBeGreaterThan(100);
    expect(c1 * 501).toBeLessThan(2 * 1024 * 1024);
    expect(rss2.stub - rss1.stub).toBeLessThan(20 * 1024);
    expect(rss2.relay - rss1.relay).toBeLessThan(40 * 1024 * 1024);
    expect(received).toBeGreaterThan(0);
    // Acknowledging lets it run again.
    p.acknowledgeDataEvent(r.id, 10 * 1024 * 1024);
    await waitFor(() => counter() > c2 + 100, 5000, 'writer to resume');
    await p.shutdown(r.id, { immediate: true });
    await p.dispose();
  }, 30_000);

  it('delivers a foreground flood byte-exact to a consumer that acknowledges promptly', async () => {
    const p = new LocalPtyProvider({ runtimeDir: fx.runtimeDir, link: { manualAck: true } });
    const gen = writeGenerator(dir);
    const total = 20 * 1024 * 1024;
    const hash = createHash('sha256');
    let bytes = 0;
    let nextSeq = 0;
    let gaps = 0;
    const exits: string[] = [];
    p.onData((e) => {
      if (e.seq !== nextSeq) gaps++;
      nextSeq = e.seq + e.data.length;
      hash.update(e.data);
      bytes += e.data.length;
      p.acknowledgeDataEvent(e.id, e.data.length);
    });
    p.onExit((e) => exits.push(e.id));
    const r = await p.spawn({ cols: 120, rows: 30, command: 'node', args: [gen, '77', String(total), '0'] });
    const exp = expectedStream(77, total);
    await waitFor(() => exits.includes(r.id), 60_000, 'flood to end');
    await waitFor(() => bytes >= exp.bytes, 5000, 'the last bytes').catch(() => {});
    expect({ bytes, gaps }).toEqual({ bytes: exp.bytes, gaps: 0 });
    expect(hash.digest('hex')).toBe(exp.sha256);
    await p.dispose();
  }, 90_000);
});

describe('background keep-tail thinning', () => {
  let fx: LocalFixture;
  beforeAll(async () => {
    fx = await startLocal();
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it('20 background floods cost at most the keep-tail budget per second each', async () => {
    const p = fx.provider;
    const bytes = new Map<string, number>();
    const gaps = new Map<string, number>();
    p.onData((e) => bytes.set(e.id, (bytes.get(e.id) ?? 0) + e.data.length));
    p.onBackgroundStreamEvent((e) => {
      if (e.type === 'dataGap') gaps.set(e.id, (gaps.get(e.id) ?? 0) + e.droppedBytes);
    });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await p.spawn({ cols: 80, rows: 24, command: 'sh', args: ['-c', 'read go; exec yes'] });
      await p.setPtyBackgrounded(r.id, true);
      ids.push(r.id);
    }
    for (const id of ids) bytes.set(id, 0);
    await Promise.all(ids.map((id) => p.write(id, 'go\r')));
    const seconds = 10;
    await sleep(seconds * 1000);
    const keep = Math.max(64 * 1024, Math.floor((2 * 1024 * 1024) / 20));
    for (const id of ids) {
      // At most one keep-tail per flush (1 s), plus the echo of "go".
      expect(bytes.get(id)).toBeLessThanOrEqual((seconds + 2) * keep);
      expect(gaps.get(id) ?? 0).toBeGreaterThan(keep);
    }
    const list = await p.listProcesses();
    expect(list.filter((x) => ids.includes(x.id) && !x.exited)).toHaveLength(20);
    await Promise.all(ids.map((id) => p.shutdown(id, { immediate: true })));
  }, 60_000);

  it('keeps bells, titles and command finishes from dropped output, in order, and foregrounds without a gap', async () => {
    const p = fx.provider;
    const facts: { seq: number; what: string }[] = [];
    const bg: PtyBackgroundStreamEvent[] = [];
    let id = '';
    const note = (seq: number, f: PtyFactEvent['fact'] | { type: 'exit' }) => {
      if (f.type === 'bell') facts.push({ seq, what: 'bell' });
      else if (f.type === 'title' && f.title.startsWith('T')) facts.push({ seq, what: `title ${f.title}` });
      else if (f.type === 'commandFinished' && f.commandLine === 'false')
        facts.push({ seq, what: `finished ${f.exitCode}` });
    };
    p.onFact((e) => e.id === id && note(e.seq, e.fact));
    p.onBackgroundStreamEvent((e) => {
      if (e.id !== id) return;
      bg.push(e);
      if (e.type === 'fact') note(e.seq, e.fact);
    });
    const out = new OutputCollector(p);
    const r = await p.spawn({ cols: 80, rows: 24, command: 'bash', env: { HOME: fx.home } });
    id = r.id;
    out.bind(r.id);
    await out.waitText(/[$#] $/);
    await p.setPtyBackgrounded(r.id, true);
    const flood = 'yes | head -c 2000000';
    for (const cmd of [flood, "printf '\\a'", flood, "printf '\\e]0;T1\\a'", flood, 'false', flood]) {
      await p.write(r.id, `${cmd}\r`);
    }
    await waitFor(() => facts.some((f) => f.what === 'finished 1'), 30_000, 'the command finish');
    expect(facts.map((f) => f.what)).toEqual(['bell', 'title T1', 'finished 1']);
    expect([...facts.map((f) => f.seq)].sort((a, b) => a - b)).toEqual(facts.map((f) => f.seq));
    expect(bg.some((e) => e.type === 'dataGap')).toBe(true);
    expect(bg[0]).toMatchObject({ type: 'backgroundMarker', background: true });
    await p.write(r.id, 'echo quiet\r');
    await sleep(1500);
    const model = await p.getBufferSnapshot(r.id);
    const back = new Promise<PtyBackgroundStreamEvent>((resolve) =>
      p.onBackgroundStreamEvent(
        (e) => e.id === id && e.type === 'backgroundMarker' && !e.background && resolve(e),
      ),
    );
    await p.setPtyBackgrounded(r.id, false);
    const marker = await back;
    if (marker.type !== 'backgroundMarker')
      throw new Error(`expected a backgroundMarker, got ${marker.type}`);
    expect(marker.snapshot?.data).toBe(model.data);
    // Live output continues from the snapshot's seq: no gap, no overlap.
    const after = new OutputCollector(p, r.id, marker.seq);
    await p.write(r.id, 'echo back-in-front\r');
    await after.waitText('back-in-front\r\n');
    expect(after.gaps).toEqual([]);
    await p.shutdown(r.id, { immediate: true });
  }, 60_000);

  it('keeps only the background ring for a session every link has in the background (history off)', async () => {
    // The RAM ring's rules, as they hold without an output log (--history off, or a full disk);
    // with a log both sessions replay from disk (test/integration/output-history.test.ts).
    const ringOnly = await startLocal(['--history', 'off']);
    const p = ringOnly.provider;
    const flood = (tag: string) => [
      '-c',
      `read go; head -c 3000000 /dev/zero | tr '\\0' x; echo; echo ${tag}; exec sleep 600`,
    ];
    const bg = await p.spawn({ cols: 80, rows: 24, command: 'sh', args: flood('BGDONE') });
    const fg = await p.spawn({ cols: 80, rows: 24, command: 'sh', args: flood('FGDONE') });
    await p.setPtyBackgrounded(bg.id, true);
    await Promise.all([p.write(bg.id, 'go\r'), p.write(fg.id, 'go\r')]);
    for (const [id, tag] of [
      [bg.id, 'BGDONE'],
      [fg.id, 'FGDONE'],
    ])
      await waitFor(async () => (await p.getBufferSnapshot(id)).data.includes(tag), 30_000, tag);
    // A second link asks for everything since seq 0: the foreground session still holds its
    // 3 MB in the 4 MiB ring; the background one kept 512 KiB, so the newcomer gets a snapshot.
    const other = new LocalPtyProvider({ runtimeDir: ringOnly.runtimeDir });
    try {
      const f = await other.attach(fg.id, { fromSeq: 0 });
      expect(f.providerSequence.generation).toBe('continued');
      expect(f.replay?.length).toBeGreaterThan(3_000_000);
      const b = await other.attach(bg.id, { fromSeq: 0 });
      expect(b.providerSequence.generation).toBe('reset');
      expect(b.snapshot?.data).toContain('BGDONE');
    } finally {
      await other.dispose();
      await Promise.all([p.shutdown(bg.id, { immediate: true }), p.shutdown(fg.id, { immediate: true })]);
      await ringOnly.cleanup();
    }
  }, 60_000);
});
