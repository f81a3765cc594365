import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { resolveHistoryLimits } from '../../agent-stub/history/history-limits.js';
import {
  SessionLog,
  type SessionLogOwner,
  WRITE_DELAY_MS,
  WRITE_MAX_DELAY_MS,
} from '../../agent-stub/history/session-log.js';

const realSetTimeout = globalThis.setTimeout;
const root = mkdtempSync(join(tmpdir(), 'ptr-seglog-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

function owner(): SessionLogOwner & { total: number; failures: string[] } {
  const o = {
    total: 0,
    failures: [] as string[],
    resized: (_l: SessionLog, d: number) => {
      o.total += d;
    },
    rolled: () => {},
    failed: (_l: SessionLog, e: NodeJS.ErrnoException) => {
      o.failures.push(e.code ?? e.message);
    },
  };
  return o;
}

function freshLog(segmentBytes: number, sessionBytes: number) {
  const dir = join(root, `s${n++}`);
  mkdirSync(dir);
  const o = owner();
  return { log: new SessionLog(dir, 0, { segmentBytes, sessionBytes }, o), owner: o, dir };
}

describe('SessionLog', () => {
  it('reads back any range exactly, queued or written, across segment boundaries (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 5000 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.tuple(fc.nat(), fc.nat()), { minLength: 1, maxLength: 5 }),
        fc.boolean(),
        async (chunks, ranges, waitForDisk) => {
          const { log } = freshLog(4096, 1 << 30);
          const all = Buffer.concat(chunks.map((c) => Buffer.from(c)));
          for (const c of chunks) log.append(c);
          if (waitForDisk) await log.flushed();
          for (const [a, b] of ranges) {
            const from = a % (all.length + 1);
            const to = from + (b % (all.length - from + 1));
            const got = await log.read(from, to);
            expect(got?.equals(all.subarray(from, to))).toBe(true);
          }
          log.destroy();
        },
      ),
      { numRuns: 40 },
    );
  });

  it('joins the chunks of a flood: a write per 64 KiB or per 10 ms, not one per PTY read', async () => {
    const { log } = freshLog(1 << 30, 1 << 30);
    const chunk = Buffer.alloc(4096, 0x62);
    const total = 4 * 1024 * 1024;
    // A flood as the daemon sees it: one PTY read per turn of the event loop, and a turn long
    // enough (its other work) for the write in flight to complete before the next read.
    for (let sent = 0; sent < total; sent += chunk.length) {
      log.append(chunk);
      const until = performance.now() + 0.3;
      while (performance.now() < until) {
        // the turn's other work
      }
      await new Promise((r) => setImmediate(r));
    }
    await log.flushed();
    expect((await log.read(0, total))?.equals(Buffer.alloc(total, 0x62))).toBe(true);
    // One write per chunk would be 1024.
    expect(log.writes).toBeLessThanOrEqual(total / (16 * 1024));
    log.destroy();
  });

  it('drops the oldest segments at its cap; files 0600; reads of dropped ranges say so', async () => {
    const { log, owner: o, dir } = freshLog(64 * 1024, 256 * 1024);
    const chunk = Buffer.alloc(16 * 1024, 0x61);
    for (let i = 0; i < 64; i++) log.append(chunk); // 1 MiB
    await log.flushed();
    expect(log.bytes).toBeLessThanOrEqual(256 * 1024);
    expect(o.total).toBe(log.bytes);
    expect(log.start).toBeGreaterThan(0);
    expect(await log.read(0, 10)).toBeUndefined();
    expect((await log.read(log.start, log.head))?.length).toBe(log.head - log.start);
    const files = readdirSync(dir).filter((f) => f.endsWith('.seg'));
    expect(files.length).toBe(log.segmentCount);
    for (const f of files) expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
    expect(Number(files.sort()[0].slice(0, -4))).toBe(log.start);
    log.destroy();
  });

  it('leaves no file of a segment dropped while its file was being opened', async () => {
    // The drop's unlink and the writer's open run on the thread pool in either order; when the
    // unlink ran first, the open made the file again (a few times in a hundred on a 2-core VM),
    // and a listing showed an empty file older than the log's start. Bounded: 400 tries.
    const segName = `${'0'.repeat(16)}.seg`;
    const left: number[] = [];
    for (let i = 0; i < 400; i++) {
      const { log, dir } = freshLog(1000, 2000);
      log.append(Buffer.alloc(1000, 0x61));
      const first = log.flushed(); // the open of segment 0 is now in flight
      log.append(Buffer.alloc(1000, 0x62));
      log.append(Buffer.alloc(1000, 0x63)); // the third segment drops the first
      expect(log.start).toBe(1000);
      await first;
      await log.flushed();
      // The unlink may still be on its way: a file still there after 100 ms stays.
      for (let t = 0; t < 50 && readdirSync(dir).includes(segName); t++)
        await new Promise((r) => realSetTimeout(r, 2));
      if (readdirSync(dir).includes(segName)) left.push(i);
      log.destroy();
    }
    expect(left).toEqual([]);
  });

  it('holds a descriptor only for the segment being written: none for complete or dropped ones', async () => {
    // Written while newest, a segment used to keep its file open until it was dropped (16 per
    // session at the default caps), and one dropped while another was being written kept it for good.
    const { log, dir } = freshLog(1000, 8000);
    const openInDir = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).startsWith(`${dir}/`);
        } catch {
          return false; // closed meanwhile (the readdir's own descriptor)
        }
      }).length;
    // Descriptors close on the thread pool: poll (at most 1 s) until the count is the one expected.
    const settled = async (want: number) => {
      for (let t = 0; t < 100 && openInDir() !== want; t++) await new Promise((r) => realSetTimeout(r, 10));
      return openInDir();
    };
    for (let i = 0; i < 6; i++) {
      log.append(Buffer.alloc(1000, 0x61 + i));
      await log.flushed();
    }
    expect(log.segmentCount).toBe(6);
    expect(await settled(1)).toBe(1);
    // A flood: segments rolled and dropped while others are written.
    for (let i = 0; i < 40; i++) log.append(Buffer.alloc(700, 0x61));
    await log.flushed();
    expect(log.start).toBeGreaterThan(0);
    expect(await settled(1)).toBe(1);
    expect(readdirSync(dir).length).toBe(log.segmentCount);
    log.destroy();
    expect(await settled(0)).toBe(0);
  });

  it('keystrokes wait a moment and reach the disk together', async () => {
    const { log, dir } = freshLog(1 << 30, 1 << 30);
    for (const ch of 'typing') log.append(Buffer.from(ch));
    // Nothing touches the disk in the turn the output came in (the echo goes first).
    await new Promise((r) => setImmediate(r));
    expect(readdirSync(dir)).toEqual([]);
    expect((await log.read(0, 6))?.toString()).toBe('typing');
    await new Promise((r) => setTimeout(r, WRITE_DELAY_MS * 5));
    const [file] = readdirSync(dir);
    expect(statSync(join(dir, file!)).size).toBe(6);
    log.destroy();
  });

  it('keys typed 2 ms apart reach the disk once the burst pauses, and a trickle every WRITE_MAX_DELAY_MS', async () => {
    const { log } = freshLog(1 << 30, 1 << 30);
    // Timers and the clock are fake; the file system's callbacks come back on real loop turns.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
    };
    // A real millisecond (the fake clock stands still meanwhile): a write's completion is back.
    const realMs = () => new Promise((r) => realSetTimeout(r, 1));
    try {
      // 40 keys 2 ms apart (80 ms): no write is issued between two keys of the burst.
      for (let i = 0; i < 40; i++) {
        log.append(Buffer.from('k'));
        vi.advanceTimersByTime(2);
        await turns(2);
      }
      expect(log.writes).toBe(0);
      vi.advanceTimersByTime(WRITE_DELAY_MS);
      // The write's completion comes back from libuv's thread pool: wait for it in real time
      // (bounded), not a count of loop turns, which a loaded machine can outrun.
      const deadline = performance.now() + 5000;
      while (log.writes === 0 && performance.now() < deadline) await realMs();
      expect(log.writes).toBe(1);
      // Output that never pauses (a key every 2 ms for 1 s) still reaches the disk about every
      // WRITE_MAX_DELAY_MS: ~10 writes, where a fixed WRITE_DELAY_MS after each write made ~100.
      for (let t = 0; t < 1000; t += 2) {
        log.append(Buffer.from('k'));
        vi.advanceTimersByTime(2);
        await realMs();
      }
      const trickleWrites = log.writes - 1;
      // (Without the cap it would never write while the output flows.)
      expect(trickleWrites).toBeGreaterThanOrEqual(1000 / (WRITE_MAX_DELAY_MS + 50));
      expect(trickleWrites).toBeLessThanOrEqual(1000 / WRITE_MAX_DELAY_MS + 1);
    } finally {
      vi.useRealTimers();
    }
    await log.flushed();
    expect((await log.read(0, log.head))?.toString()).toBe('k'.repeat(540));
    log.destroy();
  });

  it('a failed write ends the log and tells its owner (a dir that is gone)', async () => {
    const { log, owner: o, dir } = freshLog(64 * 1024, 256 * 1024);
    rmSync(dir, { recursive: true });
    log.append(Buffer.from('hello'));
    await log.flushed();
    expect(log.healthy).toBe(false);
    expect(o.failures).toEqual(['ENOENT']);
    expect(o.total).toBe(0);
    expect(await log.read(0, 5)).toBeUndefined();
  });
});

describe('resolveHistoryLimits', () => {
  it('fills defaults and rejects impossible relations with the flag named', () => {
    expect(resolveHistoryLimits({})).toMatchObject({
      segmentBytes: 4 << 20,
      sessionBytes: 64 << 20,
      hostBytes: 1 << 30,
    });
    expect(() => resolveHistoryLimits({ sessionBytes: 4 << 20 })).toThrow(/--history-session-bytes/);
    expect(() => resolveHistoryLimits({ hostBytes: 1 << 20 })).toThrow(/--history-host-bytes/);
    expect(() => resolveHistoryLimits({ segmentBytes: 1000 })).toThrow(/--history-segment-bytes/);
    expect(() => resolveHistoryLimits({ freePercent: 0 })).toThrow(/--history-free-percent/);
    expect(() => resolveHistoryLimits({ tailBytes: 1.5 })).toThrow(/--tail-bytes/);
  });
});
