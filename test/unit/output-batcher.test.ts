import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CONTROL_HOLD_MS, ConnectionOutput } from '../../agent-stub/daemon/connection-output.js';
import {
  BATCH_MAX_BYTES,
  FULL_READ_HOLD_MS,
  PEEK_PASSES,
  PTY_FULL_READ_BYTES,
  STREAM_GAP_MS,
  STREAM_HOLD_MS,
  STREAM_MIN_BYTES,
} from '../../agent-stub/daemon/output-batcher.js';
import type { PtySession } from '../../agent-stub/session/pty-session.js';
import {
  encodeInputAckFrame,
  encodeJsonFrame,
  type Frame,
  FrameType,
} from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';

const A = { id: 'a', incarnationId: 'i' } as unknown as PtySession;
const B = { id: 'b', incarnationId: 'i' } as unknown as PtySession;
const KEY_SPACING_MS = 2;

/**
 * A socket as the daemon sees it: writes between cork() and uncork() are one write (writev);
 * `kernelFull` makes the kernel take nothing, so writes wait (writableLength > 0, callbacks held)
 * until `drainKernel()`.
 */
class FakeSocket extends EventEmitter {
  /** One entry per write that reached the kernel: when, and the frames in it. */
  readonly writes: { at: number; frames: Frame[] }[] = [];
  kernelFull = false;
  /** Write callbacks on a later turn, as libuv's for a write the kernel took at once. */
  asyncCallbacks = false;
  private corked = 0;
  private batch: { buf: Uint8Array; cb?: () => void }[] = [];
  private waiting: { bufs: Uint8Array[]; cbs: (() => void)[] }[] = [];
  private readonly decoder = new FrameDecoder();
  destroyed = false;

  get writableLength(): number {
    let n = 0;
    for (const w of this.waiting) for (const b of w.bufs) n += b.length;
    for (const b of this.batch) n += b.buf.length;
    return n;
  }
  cork(): void {
    this.corked++;
  }
  uncork(): void {
    if (--this.corked === 0) this.commit();
  }
  write(buf: Uint8Array, cb?: () => void): boolean {
    this.batch.push({ buf, cb });
    if (this.corked === 0) this.commit();
    return true;
  }
  drainKernel(): void {
    this.kernelFull = false;
    for (const w of this.waiting.splice(0)) this.deliver(w.bufs, w.cbs);
  }
  private commit(): void {
    const bufs = this.batch.map((b) => b.buf);
    const cbs = this.batch.flatMap((b) => (b.cb ? [b.cb] : []));
    this.batch = [];
    if (this.kernelFull) this.waiting.push({ bufs, cbs });
    else this.deliver(bufs, cbs);
  }
  private deliver(bufs: Uint8Array[], cbs: (() => void)[]): void {
    this.writes.push({ at: Date.now(), frames: this.decoder.push(Buffer.concat(bufs)) });
    const done = () => {
      for (const cb of cbs) cb();
    };
    if (this.asyncCallbacks) setImmediate(done);
    else done();
  }
}

function setup(clock: () => number = () => Date.now()) {
  const socket = new FakeSocket();
  const out = new ConnectionOutput(
    socket as unknown as Socket,
    { blocked: () => {}, unblocked: () => {}, overCap: () => false },
    clock,
  );
  return { socket, out };
}

/** Runs what is due now (immediates) without moving the clock. */
const settle = () => vi.advanceTimersByTime(0);
/** The next turn of the loop, 1 ms on (a fake clock runs an immediate queued at the same instant only once). */
const nextTurn = () => vi.advanceTimersByTime(1);

describe('ConnectionOutput and OutputBatcher', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000, toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends a burst of keystroke echoes 2 ms apart one write each, with no added delay', () => {
    const { socket, out } = setup();
    const pushedAt: number[] = [];
    for (let i = 0; i < 20; i++) {
      pushedAt.push(Date.now());
      out.data(A, i, Buffer.from([0x61 + i]));
      settle();
      vi.advanceTimersByTime(KEY_SPACING_MS);
    }
    expect(socket.writes.map((w) => w.at)).toEqual(pushedAt);
    expect(socket.writes.map((w) => w.frames.length)).toEqual(pushedAt.map(() => 1));
    out.close();
  });

  it('a stream of short reads (a line-buffered program) coalesces after its first STREAM_MIN_BYTES; an echo never waits', () => {
    const { socket, out } = setup();
    let seq = 0;
    const reads = 4000;
    const lineOf = (i: number) => `line ${String(i).padStart(6, '0')} ${'x'.repeat(50)}\r\n`;
    for (let i = 0; i < reads; i++) {
      const line = Buffer.from(lineOf(i));
      out.data(A, seq, line);
      seq += line.length;
      // One short read per turn, 1 ms apart (a fast daemon reads each line on its own).
      nextTurn();
    }
    vi.advanceTimersByTime(STREAM_HOLD_MS);
    nextTurn();
    const frames = socket.writes.flatMap((w) => w.frames).filter((f) => f.type === FrameType.Data);
    const text = frames
      .map((f) => (f.type === FrameType.Data ? Buffer.from(f.data).toString() : ''))
      .join('');
    expect(text).toBe(Array.from({ length: reads }, (_, i) => lineOf(i)).join(''));
    // Until the stream reached STREAM_MIN_BYTES each read went alone; after it, one frame per
    // STREAM_HOLD_MS at most (4000 reads at 1 ms: ≈ 1000 + the first ~1000).
    const alone = Math.ceil(STREAM_MIN_BYTES / lineOf(0).length);
    expect(frames.length).toBeLessThanOrEqual(alone + Math.ceil((reads - alone) / STREAM_HOLD_MS) + 2);
    expect(frames.length).toBeLessThan(reads / 2);
    expect(vi.getTimerCount()).toBe(0);
    // A keystroke after a pause longer than STREAM_GAP_MS goes at the end of its own turn.
    vi.advanceTimersByTime(STREAM_GAP_MS + 10);
    const at = Date.now();
    out.data(A, seq, Buffer.from('x'));
    settle();
    expect(socket.writes.at(-1)!.at).toBe(at);
    expect(socket.writes.at(-1)!.frames).toMatchObject([{ type: FrameType.Data, seq }]);
    out.close();
  });

  it('a stream is paced by its hold even though every write completes (and drains) at once', () => {
    const { socket, out } = setup();
    // sshd on the other core reads each frame as it comes: the kernel takes every write at
    // once, and its callback (the drain) follows a turn later, while the stream's reads go on.
    socket.asyncCallbacks = true;
    let seq = 0;
    const reads = 2000;
    const line = (i: number) => Buffer.from(`line ${String(i).padStart(6, '0')} ${'y'.repeat(50)}\r\n`);
    for (let i = 0; i < reads; i++) {
      const b = line(i);
      out.data(A, seq, b);
      seq += b.length;
      nextTurn();
    }
    vi.advanceTimersByTime(STREAM_HOLD_MS);
    nextTurn();
    const frames = socket.writes.flatMap((w) => w.frames).filter((f) => f.type === FrameType.Data);
    const bytes = frames.reduce((n, f) => n + (f.type === FrameType.Data ? f.data.length : 0), 0);
    expect(bytes).toBe(seq);
    // Sending what a drain found pending made about one frame per read; paced, one per STREAM_HOLD_MS.
    const alone = Math.ceil(STREAM_MIN_BYTES / line(0).length);
    expect(frames.length).toBeLessThanOrEqual(alone + Math.ceil((reads - alone) / STREAM_HOLD_MS) + 2);
    out.close();
  });

  it('an input acknowledgement rides in the echo’s write, or goes alone after a few ms', () => {
    const { socket, out } = setup();
    out.owe(() => encodeInputAckFrame(1));
    settle();
    expect(socket.writes).toHaveLength(0);
    vi.advanceTimersByTime(1);
    out.data(A, 0, Buffer.from('x'));
    settle();
    expect(socket.writes).toHaveLength(1);
    expect(socket.writes[0]!.frames.map((f) => f.type)).toEqual([FrameType.Data, FrameType.InputAck]);
    // No output follows: it goes alone after CONTROL_HOLD_MS.
    out.owe(() => encodeJsonFrame({ t: 'inputAck', upTo: 2 }));
    vi.advanceTimersByTime(CONTROL_HOLD_MS - 1);
    expect(socket.writes).toHaveLength(1);
    vi.advanceTimersByTime(1);
    nextTurn();
    expect(socket.writes).toHaveLength(2);
    expect(socket.writes[1]!.frames).toMatchObject([{ type: FrameType.Json, message: { upTo: 2 } }]);
    out.close();
  });

  it('a flood behind a full socket coalesces into frames of at most 64 KiB, in order', () => {
    const { socket, out } = setup();
    const chunk = 4095;
    const reads = 400;
    socket.kernelFull = true;
    let seq = 0;
    for (let i = 0; i < reads; i++) {
      out.data(i % 7 === 3 ? B : A, seq, Buffer.alloc(chunk, i & 0xff));
      seq += chunk;
      nextTurn();
      if (i % 50 === 49) {
        socket.drainKernel();
        socket.kernelFull = true;
        nextTurn();
      }
    }
    socket.drainKernel();
    nextTurn();
    // The last batch (a full read last) goes by its hold timer, not at the drain.
    vi.advanceTimersByTime(STREAM_HOLD_MS);
    nextTurn();
    const frames = socket.writes.flatMap((w) => w.frames).filter((f) => f.type === FrameType.Data);
    let bytes = 0;
    for (const f of frames) {
      if (f.type !== FrameType.Data) continue;
      expect(f.data.length).toBeLessThanOrEqual(BATCH_MAX_BYTES + chunk);
      bytes += f.data.length;
    }
    expect(bytes).toBe(reads * chunk);
    // One frame per read would be 400; the backlog merges them ~16 to a frame.
    expect(frames.length).toBeLessThan(reads / 8);
    expect(socket.writes.length).toBeLessThan(reads / 8);
    // Per session, seqs are contiguous and in order.
    for (const id of ['a', 'b']) {
      const mine = frames.filter((f) => f.type === FrameType.Data && f.id === id);
      let next = -1;
      for (const f of mine) {
        if (f.type !== FrameType.Data) continue;
        if (next >= 0) expect(f.seq).toBeGreaterThanOrEqual(next);
        next = f.seq + f.data.length;
      }
    }
    out.close();
  });

  it('a flood of full PTY reads coalesces with an idle socket; the burst’s short last read sends it', () => {
    const { socket, out } = setup();
    let seq = 0;
    const sizes: number[] = [];
    for (let burst = 0; burst < 10; burst++) {
      for (let i = 0; i < 30; i++) sizes.push(PTY_FULL_READ_BYTES);
      sizes.push(100);
    }
    for (const n of sizes) {
      out.data(A, seq, Buffer.alloc(n, 0x78));
      seq += n;
      nextTurn();
    }
    const frames = socket.writes.flatMap((w) => w.frames);
    const bytes = frames.reduce((n, f) => n + (f.type === FrameType.Data ? f.data.length : 0), 0);
    expect(bytes).toBe(seq);
    // 310 reads; full frames (BATCH_MAX_BYTES) for each burst of 30 full reads, plus its short end.
    const perBurst = Math.ceil((30 * PTY_FULL_READ_BYTES + 100) / BATCH_MAX_BYTES) + 1;
    expect(frames.length).toBeLessThanOrEqual(10 * perBurst);
    expect(frames.length).toBeLessThan(310 / 5);
    // A full read with nothing after it goes out after FULL_READ_HOLD_MS.
    const before = socket.writes.length;
    out.data(A, seq, Buffer.alloc(PTY_FULL_READ_BYTES, 0x79));
    nextTurn();
    expect(socket.writes.length).toBe(before);
    vi.advanceTimersByTime(FULL_READ_HOLD_MS);
    nextTurn();
    expect(socket.writes.length).toBe(before + 1);
    out.close();
  });

  it('a paste’s echo read whole (one full read, nothing after it) goes after a few loop passes, not a timer', async () => {
    // Real loop passes: a fake clock runs a chained immediate only when it moves, like a timer.
    vi.useRealTimers();
    const pass = () => new Promise<void>((r) => setImmediate(r));
    const { socket, out } = setup();
    // 4 KiB pasted into `cat`: it writes 4095 + 1 bytes, which the daemon often reads as one.
    out.data(A, 0, Buffer.alloc(4096, 0x61));
    for (let i = 0; i < PEEK_PASSES; i++) await pass();
    // Held while the kernel could still hand over more (the old 2 ms hold held it far longer)…
    expect(socket.writes).toHaveLength(0);
    await pass();
    // …and sent a pass later: microseconds, where FULL_READ_HOLD_MS is 2 ms.
    expect(socket.writes).toHaveLength(1);
    expect(socket.writes[0]!.frames).toMatchObject([{ type: FrameType.Data, seq: 0 }]);
    // Read in two pieces, the second within the passes: one frame.
    await new Promise((r) => setTimeout(r, STREAM_GAP_MS + 1));
    out.data(A, 4096, Buffer.alloc(PTY_FULL_READ_BYTES, 0x62));
    await pass();
    out.data(A, 4096 + PTY_FULL_READ_BYTES, Buffer.from('c'));
    for (let i = 0; i < PEEK_PASSES + 1; i++) await pass();
    expect(socket.writes).toHaveLength(2);
    expect(socket.writes[1]!.frames).toHaveLength(1);
    const f = socket.writes[1]!.frames[0]!;
    expect(f.type === FrameType.Data ? f.data.length : 0).toBe(PTY_FULL_READ_BYTES + 1);
    out.close();
  });

  it('a JSON frame flushes pending output first; a detached session’s output is dropped', () => {
    const { socket, out } = setup();
    socket.kernelFull = true;
    out.data(A, 0, Buffer.from('x'));
    nextTurn();
    out.data(A, 1, Buffer.from('yz'));
    out.data(B, 0, Buffer.from('gone'));
    nextTurn();
    out.batcher.drop(B);
    out.frame(Buffer.from([0, 0, 0, 3, 1, 0x7b, 0x7d]));
    nextTurn();
    socket.drainKernel();
    nextTurn();
    const all = socket.writes.flatMap((w) => w.frames);
    expect(
      all.map((f) => (f.type === FrameType.Data ? `${f.id}@${f.seq}:${Buffer.from(f.data)}` : 'json')),
    ).toEqual(['a@0:x', 'a@1:yz', 'json']);
    out.close();
  });
});
