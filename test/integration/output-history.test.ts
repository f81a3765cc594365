import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonLogPath, daemonSocketPath } from '../../provider/daemon-runtime/stub-paths.js';
import { encodeJsonFrame, FrameType } from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { STUB_PROTOCOL_VERSION } from '../../provider/wire/messages.js';
import { stubBuildId } from '../../relay/core/stub-bundle.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { capability, rootAvailable } from '../support/capabilities.js';
import { type LocalFixture, OutputCollector, startLocal, waitFor } from '../support/local-daemon.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/** `<stateDir>/history/d-<pid>-<start>`: the daemon's history dir. */
function daemonHistoryDir(stateDir: string, pid: number): string {
  const root = join(stateDir, 'history');
  const name = readdirSync(root).find((n) => n.startsWith(`d-${pid}-`));
  if (!name) throw new Error(`no history dir of daemon ${pid} in ${root}`);
  return join(root, name);
}

function segmentsOf(dir: string): { seq: number; size: number; path: string }[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith('.seg'))
    .sort()
    .map((n) => ({ seq: Number(n.slice(0, -4)), size: statSync(join(dir, n)).size, path: join(dir, n) }));
}

function duBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    n += e.isDirectory() ? duBytes(p) : statSync(p).size;
  }
  return n;
}

/** Collects a second link's output of `id` from `fromSeq` until it reaches `head`. */
async function replayFrom(runtimeDir: string, id: string, fromSeq: number, head: number, relayId?: string) {
  const p = new LocalPtyProvider({ runtimeDir, ...(relayId ? { relayId } : {}) });
  const out = new OutputCollector(p);
  try {
    const r = await p.attach(id, { fromSeq });
    const startSeq = r.providerSequence.generation === 'reset' ? (r.snapshot?.seq ?? -1) : fromSeq;
    out.chunks.unshift(Buffer.from(r.replay ?? []));
    out.bind(id, r.providerSequence.value);
    await waitFor(() => out.nextSeq >= head, 30_000, `replay to reach ${head} (at ${out.nextSeq})`);
    return { result: r, startSeq, bytes: out.bytes, gaps: out.gaps };
  } finally {
    out.stop();
    await p.dispose();
  }
}

/**
 * A relay link (`linkId`) that attaches `id` from 0, never acknowledges, and vanishes without a
 * goodbye: its claim stands for the grace period.
 */
async function departedLink(runtimeDir: string, id: string, linkId: string): Promise<void> {
  const sock = connect(daemonSocketPath(runtimeDir, stubBuildId()));
  const dec = new FrameDecoder();
  const replied = new Promise<{ result?: { generation?: string }; error?: unknown }>((resolve) => {
    sock.on('data', (c) => {
      // The attach reply carries its replay: a JSON+BLOB frame.
      for (const f of dec.push(c))
        if (
          (f.type === FrameType.Json || f.type === FrameType.JsonBlob) &&
          (f.message as { t?: string }).t === 'res'
        )
          resolve(f.message as { result?: { generation?: string }; error?: unknown });
    });
  });
  await new Promise<void>((res) => sock.once('connect', () => res()));
  sock.write(
    encodeJsonFrame({ t: 'hello', protocol: STUB_PROTOCOL_VERSION, buildId: 'x', role: 'test', linkId }),
  );
  sock.write(encodeJsonFrame({ t: 'req', rid: 1, method: 'attach', params: { id, fromSeq: 0 } }));
  const attached = await replied;
  expect(attached.error).toBeUndefined();
  expect(attached.result?.generation).toBe('continued');
  sock.destroy();
  await new Promise((res) => setTimeout(res, 100));
}

/** The daemon's id of a terminal (`local/pty-3` → `pty-3`): its log dir's name. */
const localId = (id: string) => id.slice(id.lastIndexOf('/') + 1);

const stateDir = () => process.env.PTYRELAY_STATE_DIR as string;

describe('output history on disk', () => {
  let fx: LocalFixture;
  beforeAll(async () => {
    fx = await startLocal([
      ...['--history-segment-bytes', String(64 * KiB), '--history-session-bytes', String(1 * MiB)],
      ...['--tail-bytes', String(64 * KiB)],
    ]);
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it('replays exactly from the log across segment boundaries; dirs 0700, files 0600', async () => {
    const live = new OutputCollector(fx.provider);
    const r = await fx.provider.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'seq 1 100000; echo SEQ-DONE; exec sleep 600'],
    });
    live.bind(r.id);
    await live.waitText('SEQ-DONE\r\n', 30_000);
    const head = live.nextSeq;
    expect(head).toBeGreaterThan(600 * KiB);
    const dir = join(daemonHistoryDir(stateDir(), fx.daemonPid), localId(r.id));
    // The log is written behind delivery: under load its last segments land after the output did.
    const segs = await waitFor(
      () => {
        const all = segmentsOf(dir);
        const last = all.at(-1);
        return last && last.seq + last.size >= head ? all : undefined;
      },
      10_000,
      'the log to hold all the output',
    );
    expect(segs.length).toBeGreaterThan(8);
    expect(statSync(join(stateDir(), 'history')).mode & 0o777).toBe(0o700);
    expect(statSync(dirname2(dir)).mode & 0o777).toBe(0o700);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const s of segs) expect(statSync(s.path).mode & 0o777).toBe(0o600);
    // From seq 1000 (long out of the 64 KiB tail), and from a seq just before a segment boundary.
    for (const from of [1000, segs[3].seq - 7]) {
      const got = await replayFrom(fx.runtimeDir, r.id, from, head);
      expect(got.result.providerSequence.generation).toBe('continued');
      expect(got.gaps).toEqual([]);
      expect(got.bytes.subarray(0, head - from).equals(live.bytes.subarray(from, head))).toBe(true);
    }
    live.stop();
    await fx.provider.shutdown(r.id, { immediate: true });
    // Logs gone after shutdown.
    await waitFor(() => !existsSync(dir), 5000, 'the session log to be removed');
  });

  it('after segments were dropped: a replay from before them is a reset at the snapshot seq; from the oldest held seq it is exact', async () => {
    const live = new OutputCollector(fx.provider);
    const r = await fx.provider.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'seq 1 400000; echo SEQ-DONE; exec sleep 600'],
    });
    live.bind(r.id);
    await live.waitText('SEQ-DONE\r\n', 60_000);
    const head = live.nextSeq;
    const dir = join(daemonHistoryDir(stateDir(), fx.daemonPid), localId(r.id));
    // The echo goes out before the log's write (and a dropped segment's unlink): wait until the
    // files hold everything up to the live head and stopped changing, or the oldest file listed
    // may be one the log has already let go of.
    let listed = '';
    let stable = 0;
    await waitFor(
      () => {
        const now = segmentsOf(dir);
        const last = now.at(-1);
        stable = JSON.stringify(now) === listed ? stable + 1 : 0;
        listed = JSON.stringify(now);
        // Unchanged over five polls (~100 ms) and up to the head.
        return stable >= 5 && last !== undefined && last.seq + last.size >= head;
      },
      10_000,
      'the session log to reach the live head',
    );
    const segs = segmentsOf(dir);
    const held = segs.reduce((n, s) => n + s.size, 0);
    expect(held).toBeLessThanOrEqual(1 * MiB);
    expect(segs[0].seq).toBeGreaterThan(0);
    const reset = await replayFrom(fx.runtimeDir, r.id, 0, head);
    expect(reset.result.providerSequence.generation).toBe('reset');
    const snapSeq = reset.result.snapshot?.seq as number;
    expect(snapSeq).toBeGreaterThanOrEqual(segs[0].seq);
    expect(snapSeq + (reset.result.replay?.length ?? 0)).toBe(reset.result.providerSequence.value);
    expect(reset.gaps).toEqual([]);
    expect(reset.bytes.subarray(0, head - snapSeq).equals(live.bytes.subarray(snapSeq, head))).toBe(true);
    const oldest = segs[0].seq;
    const exact = await replayFrom(fx.runtimeDir, r.id, oldest, head);
    expect(exact.result.providerSequence.generation).toBe('continued');
    expect(exact.bytes.subarray(0, head - oldest).equals(live.bytes.subarray(oldest, head))).toBe(true);
    live.stop();
    await fx.provider.shutdown(r.id, { immediate: true });
  }, 90_000);

  it('a departed link no longer pauses the program: it runs on into the log and resumes exactly', async () => {
    const r = await fx.provider.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'read go; seq 1 120000; echo OUTAGE-DONE; exec sleep 600'],
    });
    const live = new OutputCollector(fx.provider).bind(r.id);
    await departedLink(fx.runtimeDir, localId(r.id), 'gone-relay');
    await fx.provider.write(r.id, 'go\r');
    // ~700 KB: far more than the departed link's window; without the log it would stop at it for 30 s.
    await live.waitText('OUTAGE-DONE\r\n', 20_000);
    const head = live.nextSeq;
    const back = await replayFrom(fx.runtimeDir, r.id, 0, head, 'gone-relay');
    expect(back.result.providerSequence.generation).toBe('continued');
    expect(back.bytes.subarray(0, head).equals(live.bytes.subarray(0, head))).toBe(true);
    live.stop();
    await fx.provider.shutdown(r.id, { immediate: true });
  }, 60_000);

  it('a departed link holds the program once it is as far behind as the log keeps, so it still resumes exactly', async () => {
    // This daemon's log keeps 1 MiB in 64 KiB segments: it is sure to keep 896 KiB.
    const keeps = 1 * MiB - 128 * KiB;
    const r = await fx.provider.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'read go; seq 1 200000; echo HELD-DONE; exec sleep 600'],
    });
    const live = new OutputCollector(fx.provider).bind(r.id);
    await departedLink(fx.runtimeDir, localId(r.id), 'held-relay');
    await fx.provider.write(r.id, 'go\r');
    // 1.39 MB of output: the program stops when the departed link is `keeps` behind.
    await waitFor(() => live.nextSeq >= keeps - 64 * KiB, 20_000, 'output up to the bound');
    await new Promise((res) => setTimeout(res, 1500));
    expect(live.text).not.toContain('HELD-DONE');
    expect(live.nextSeq).toBeGreaterThanOrEqual(keeps);
    expect(live.nextSeq).toBeLessThan(keeps + 64 * KiB);
    const held = live.nextSeq;
    // The link comes back: an exact replay (nothing was dropped for it), and the program goes on.
    const back = await replayFrom(fx.runtimeDir, r.id, 0, held, 'held-relay');
    expect(back.result.providerSequence.generation).toBe('continued');
    expect(back.bytes.subarray(0, held).equals(live.bytes.subarray(0, held))).toBe(true);
    await live.waitText('HELD-DONE\r\n', 20_000);
    live.stop();
    await fx.provider.shutdown(r.id, { immediate: true });
  }, 60_000);
});

describe('output history: readers', () => {
  it('a reader pages through 60 MiB of history, byte-exact', async () => {
    const fx = await startLocal(['--history-session-bytes', String(96 * MiB)]);
    try {
      // seq 1..7,500,000 with CR LF: 66.4 MB.
      const n = 7_500_000;
      const r = await fx.provider.spawn({
        cols: 80,
        rows: 24,
        command: 'sh',
        args: ['-c', `seq 1 ${n}; echo PAGE-END; exec sleep 600`],
      });
      const expected = createHash('sha256');
      let expectedLen = 0;
      for (let i = 1; i <= n; i += 100_000) {
        const chunk = `${Array.from({ length: Math.min(100_000, n - i + 1) }, (_, k) => String(i + k)).join('\r\n')}\r\n`;
        expected.update(chunk);
        expectedLen += chunk.length;
      }
      expected.update('PAGE-END\r\n');
      expectedLen += 'PAGE-END\r\n'.length;
      expect(expectedLen).toBeGreaterThan(60 * MiB);
      const provider = fx.provider;
      await waitFor(
        async () => (await provider.readHistory(r.id, { fromSeq: 0, maxBytes: 1 })).headSeq >= expectedLen,
        120_000,
        'the output to reach its end',
      );
      const got = createHash('sha256');
      let seq = 0;
      let pages = 0;
      while (seq < expectedLen) {
        const page = await provider.readHistory(r.id, { fromSeq: seq, maxBytes: 1 * MiB });
        expect(page.fromSeq).toBe(seq);
        expect(page.startSeq).toBe(0);
        const take = Buffer.from(page.data).subarray(0, expectedLen - seq);
        got.update(take);
        seq += take.length;
        pages++;
      }
      expect(pages).toBeGreaterThanOrEqual(60);
      expect(got.digest('hex')).toBe(expected.digest('hex'));
      await provider.shutdown(r.id, { immediate: true });
    } finally {
      await fx.cleanup();
    }
  }, 180_000);
});

/** The parent dir. */
function dirname2(p: string): string {
  return p.slice(0, p.lastIndexOf('/'));
}

describe('output history: host-wide cap and lifecycle', () => {
  it('keeps all logs of the daemon under the host-wide cap, oldest segments first', async () => {
    const fx = await startLocal([
      ...['--history-segment-bytes', String(64 * KiB), '--history-session-bytes', String(512 * KiB)],
      ...['--history-host-bytes', String(640 * KiB), '--tail-bytes', String(64 * KiB)],
    ]);
    try {
      const heads: { id: string; head: number; live: OutputCollector }[] = [];
      for (let i = 0; i < 3; i++) {
        const live = new OutputCollector(fx.provider);
        // ~350 KB each: under the session cap, 1 MB together.
        const r = await fx.provider.spawn({
          cols: 80,
          rows: 24,
          command: 'sh',
          args: ['-c', `seq ${i}00000 ${i}50000; echo CAP-${i}; exec sleep 600`],
        });
        live.bind(r.id);
        await live.waitText(`CAP-${i}\r\n`, 30_000);
        heads.push({ id: r.id, head: live.nextSeq, live });
      }
      const ddir = daemonHistoryDir(stateDir(), fx.daemonPid);
      // Every session's log reached the disk (the last write waits for the output to pause), within the cap.
      await waitFor(
        () =>
          heads.every((h) => segmentsOf(join(ddir, localId(h.id))).length > 0) && duBytes(ddir) <= 640 * KiB,
        5000,
        'the logs on disk and within the host-wide cap',
      );
      // The first session lost its oldest segments; the last one still replays from 0.
      expect(segmentsOf(join(ddir, localId(heads[0].id)))[0].seq).toBeGreaterThan(0);
      expect(segmentsOf(join(ddir, localId(heads[2].id)))[0].seq).toBe(0);
      const first = await replayFrom(fx.runtimeDir, heads[0].id, 0, heads[0].head);
      expect(first.result.providerSequence.generation).toBe('reset');
      const last = await replayFrom(fx.runtimeDir, heads[2].id, 0, heads[2].head);
      expect(last.result.providerSequence.generation).toBe('continued');
      expect(last.bytes.subarray(0, heads[2].head).equals(heads[2].live.bytes)).toBe(true);
      for (const h of heads) h.live.stop();
    } finally {
      await fx.cleanup();
    }
  }, 90_000);

  it("removes its logs at exit, and a dead daemon's logs at the next start", async () => {
    const fx = await startLocal();
    const root = join(stateDir(), 'history');
    const ddir = daemonHistoryDir(stateDir(), fx.daemonPid);
    // A daemon that died without cleaning up (no such pid, or not started at that time).
    const dead = join(root, 'd-4194000-1');
    try {
      const r = await fx.provider.spawn({
        cols: 80,
        rows: 24,
        command: 'sh',
        args: ['-c', 'echo hi; exec sleep 600'],
      });
      await waitFor(() => segmentsOf(join(ddir, localId(r.id))).length > 0, 5000, 'a segment');
      mkdirSync(join(dead, 'pty-999'), { recursive: true });
    } finally {
      await fx.cleanup();
    }
    await waitFor(() => !existsSync(ddir), 5000, "the daemon's history dir to be removed at its exit");
    const again = await startLocal();
    try {
      expect(existsSync(dead)).toBe(false);
      expect(readFileSync(daemonLogPath(again.runtimeDir), 'utf8')).toContain(
        'removed the output history of a daemon that is gone',
      );
    } finally {
      await again.cleanup();
    }
  }, 60_000);
});

describe('output history on a full disk', () => {
  const root = rootAvailable('mounting a tmpfs for the full-disk test');
  let mnt: string | undefined;
  const savedState = process.env.PTYRELAY_STATE_DIR;
  beforeAll(() => {
    if (!root) return;
    mnt = mkdtempSync(join(tmpdir(), 'ptr-full-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', mnt]);
    } catch (err) {
      rmSync(mnt, { recursive: true, force: true });
      mnt = undefined;
      // Skips the test below, or fails the suite when `mount` is required.
      capability('mount', `mount -t tmpfs failed: ${(err as Error).message}`);
    }
  });
  afterAll(() => {
    process.env.PTYRELAY_STATE_DIR = savedState;
    if (mnt) {
      execFileSync('umount', [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  });

  it('degrades to the RAM ring with a logged warning; the live stream loses nothing', async (ctx) => {
    if (!mnt) return ctx.skip();
    process.env.PTYRELAY_STATE_DIR = mnt;
    const fx = await startLocal([
      '--history-segment-bytes',
      String(256 * KiB),
      '--history-free-percent',
      '100',
    ]);
    process.env.PTYRELAY_STATE_DIR = savedState;
    try {
      const live = new OutputCollector(fx.provider);
      const r = await fx.provider.spawn({
        cols: 80,
        rows: 24,
        command: 'sh',
        args: ['-c', 'seq 1 1000000; echo FULL-DONE; read x; echo STILL-HERE'],
      });
      live.bind(r.id);
      await live.waitText('FULL-DONE\r\n', 60_000);
      const expected = `${Array.from({ length: 1_000_000 }, (_, i) => String(i + 1)).join('\r\n')}\r\nFULL-DONE\r\n`;
      expect(live.gaps).toEqual([]);
      expect(live.text.endsWith(expected)).toBe(true);
      await fx.provider.write(r.id, 'x\r');
      await live.waitText('STILL-HERE', 10_000);
      const log = readFileSync(daemonLogPath(fx.runtimeDir), 'utf8');
      expect(log).toContain('output history failed for a session');
      expect(log).toMatch(/ENOSPC/);
      // The failed log's files are gone: the disk has its space back.
      const ddir = daemonHistoryDir(mnt, fx.daemonPid);
      await waitFor(() => !existsSync(join(ddir, localId(r.id))), 5000, 'the failed log to be removed');
      live.stop();
    } finally {
      await fx.cleanup();
    }
  }, 120_000);
});
