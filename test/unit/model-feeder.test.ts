import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { ModelFeeder, SETTLE_MAX_MS, SETTLE_MS } from '../../agent-stub/session/model-feeder.js';

function harness(retained: number) {
  const posted: { seq: number; data: string }[] = [];
  const pressure: boolean[] = [];
  const f = new ModelFeeder(
    {
      post: (seq, data) => posted.push({ seq, data: Buffer.from(data).toString() }),
      backpressure: (on) => pressure.push(on),
    },
    retained,
  );
  return { f, posted, pressure };
}

/** A feeder whose model takes `parseMs(bytes)` per batch (under fake timers); `posted` records the batches. */
function pacedFeeder(retained: number, parseMs: (bytes: number) => number) {
  const posted: { seq: number; len: number }[] = [];
  let f: ModelFeeder | undefined;
  f = new ModelFeeder(
    {
      post: (seq, d) => {
        posted.push({ seq, len: d.length });
        setTimeout(() => f?.progress(seq + d.length), parseMs(d.length));
      },
      backpressure: () => {},
    },
    retained,
  );
  return { f, posted };
}

/** Pushes `perStep` copies of `chunk` every `stepMs` for `ms` (fake timers); returns the seq after the last. */
function flood(f: ModelFeeder, chunk: Buffer, ms: number, stepMs: number, perStep: number): number {
  let seq = 0;
  for (let t = 0; t < ms; t += stepMs) {
    for (let i = 0; i < perStep; i++) {
      f.push(seq, chunk);
      seq += chunk.length;
    }
    vi.advanceTimersByTime(stepMs);
  }
  return seq;
}

const lines = (from: number, to: number) => {
  let s = '';
  for (let i = from; i <= to; i++) s += `line ${i}\r\n`;
  return Buffer.from(s);
};

describe('ModelFeeder', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('copies a flood’s chunks into slabs: the PTY’s read buffers are not held, and every batch is a whole buffer', () => {
    const posted: Uint8Array[] = [];
    const owned: boolean[] = [];
    const f = new ModelFeeder(
      {
        post: (_seq, d, own) => {
          posted.push(d);
          owned.push(own);
        },
        backpressure: () => {},
      },
      // Retains everything: nothing is skipped, every byte reaches the model.
      1_000_000,
    );
    const chunks: Buffer[] = [];
    let seq = 0;
    for (let i = 0; i < 400; i++) {
      const c = Buffer.from(`${String(i).padStart(5, '0')} ${'z'.repeat(1000)}\r\n`);
      chunks.push(c);
      f.push(seq, c);
      seq += c.length;
    }
    const expected = Buffer.concat(chunks).toString();
    // Reusing the read buffers now must not change what the model gets (past the first 64 KiB,
    // below a flood, the chunks are held as they are).
    for (const c of chunks.slice(80)) c.fill(0x21);
    f.flushAll();
    expect(posted.map((d) => Buffer.from(d).toString()).join('')).toBe(expected);
    // postMessage copies a view's whole buffer: what is posted is never part of a larger one.
    for (const d of posted) expect(d.byteLength).toBe(d.buffer.byteLength);
    // A joined batch is the feeder's own (it moves to the worker); a lone PTY chunk is not (the
    // log and the batcher hold it too).
    expect(owned).toEqual(posted.map(() => true));
    const lone = Buffer.allocUnsafeSlow(4);
    lone.write('echo');
    f.push(seq, lone);
    f.flushAll();
    expect(posted.at(-1)).toBe(lone);
    expect(owned.at(-1)).toBe(false);
    // A slice of Node's shared pool is copied out: transferring it would take the pool along.
    const pooled = Buffer.from('pool');
    expect(pooled.byteLength).toBeLessThan(pooled.buffer.byteLength);
    f.push(seq + 4, pooled);
    f.flushAll();
    expect(posted.at(-1)).not.toBe(pooled);
    expect(Buffer.from(posted.at(-1)!).toString()).toBe('pool');
    expect(owned.at(-1)).toBe(true);
    f.dispose();
  });

  it('reuses a flood’s slabs once skipping dropped what they held, without changing a byte the model gets', () => {
    const slabAllocs = vi.spyOn(Buffer, 'allocUnsafeSlow');
    onTestFinished(() => slabAllocs.mockRestore());
    const plain = lines(1, 220_000);
    /** Pushes `stream` up to `end` in PTY-sized reads (each a buffer of its own), the model idle; flushes. */
    const run = (stream: Buffer, end: number) => {
      // Retains 20 000 lines (~270 KiB): what is kept spans three slabs.
      const h = harness(20_000);
      slabAllocs.mockClear();
      let seq = 0;
      while (seq < end) {
        const c = Buffer.from(stream.subarray(seq, Math.min(end, seq + 4095)));
        h.f.push(seq, c);
        seq += c.length;
      }
      h.f.flushAll();
      h.f.dispose();
      return { posted: h.posted, slabs: slabAllocs.mock.calls.filter(([n]) => n === 128 * 1024).length };
    };
    // Line output: skipping keeps the tail, and the slabs of what it dropped are filled again.
    const allocations: number[] = [];
    for (const end of [2_000_000, 2_700_000]) {
      const { posted, slabs } = run(plain, end);
      expect(posted).toHaveLength(1);
      expect(posted[0]!.data).toBe(plain.subarray(posted[0]!.seq, end).toString());
      expect(posted[0]!.data.split('\r\n').length).toBeGreaterThanOrEqual(20_002);
      allocations.push(slabs);
    }
    // What is kept plus what arrives between two skips (four times what is kept): about 1.35 MB,
    // eleven slabs; without reuse every 128 KiB took a fresh slab (15 and 21 here), and with a pool
    // capped below that working set the longer flood took more than the shorter one.
    expect(allocations[0]).toBeLessThanOrEqual(12);
    expect(allocations[1]).toBe(allocations[0]);
    // A title change (not a colour) 1.2 MB in: nothing from it on can be skipped, so everything
    // after it stays pending across many slabs. Floods of different lengths end at different
    // points of the skip-and-reuse cycle: a slab reused while still referred to would show.
    const titled = Buffer.concat([
      plain.subarray(0, 1_200_000),
      Buffer.from('\x1b]0;t\x07'),
      plain.subarray(1_200_000),
    ]);
    for (let end = 1_500_000; end < 2_700_000; end += 32_000) {
      const { posted } = run(titled, end);
      expect(posted.map((p) => p.seq)).toEqual([1_200_000]);
      expect(posted[0]!.data).toBe(titled.subarray(1_200_000, end).toString());
    }
  });

  it('reuses every slab skipping released, however many a flood keeps, and lets them go once the model caught up', () => {
    const slabAllocs = vi.spyOn(Buffer, 'allocUnsafeSlow');
    onTestFinished(() => slabAllocs.mockRestore());
    const slabs = () => slabAllocs.mock.calls.filter(([n]) => n === 128 * 1024).length;
    // 100-byte lines, 10,000 kept (a terminal's scrollback): ~1 MB kept, ~5 MB pending between two
    // skips, about 40 slabs in use at once.
    const line = Buffer.from(`${'x'.repeat(98)}\r\n`);
    const h = harness(10_000);
    let seq = 0;
    const pushMb = (mb: number) => {
      for (let end = seq + mb * 1e6; seq < end; ) {
        const c = Buffer.alloc(4000);
        for (let o = 0; o < 4000; o += 100) line.copy(c, o);
        h.f.push(seq, c);
        seq += c.length;
      }
    };
    slabAllocs.mockClear();
    pushMb(12);
    const first = slabs();
    expect(first).toBeGreaterThan(30);
    expect(first).toBeLessThan(60);
    // Twelve more megabytes take no new slab: a pool capped at 8 took about 20 more per skip here.
    pushMb(12);
    expect(slabs()).toBe(first);
    h.f.flushAll();
    expect(h.posted).toHaveLength(1);
    expect(h.posted[0]!.seq).toBe(seq - h.posted[0]!.data.length);
    expect(h.posted[0]!.data.split('\r\n').length).toBeGreaterThanOrEqual(10_002);
    // The model caught up with nothing pending: the pool went back, a new flood takes fresh slabs.
    h.f.progress(seq);
    pushMb(1);
    expect(slabs()).toBeGreaterThan(first);
    h.f.dispose();
  });

  it('asks for a collection once the slab pools several sessions dropped add up to a megabyte, though each is smaller, and they stopped dropping', async () => {
    // Fresh modules: what idle-gc.ts counted for the other tests of this file does not carry over.
    vi.resetModules();
    const { ModelFeeder: Feeder } = await import('../../agent-stub/session/model-feeder.js');
    const { COLLECT_AFTER_DROPPED_BYTES } = await import('../../agent-stub/session/idle-gc.js');
    // The suite runs with --expose-gc: its `gc` is writable, not configurable.
    const g = globalThis as { gc?: () => void };
    const realGc = g.gc;
    const gc = vi.fn();
    g.gc = gc;
    onTestFinished(() => {
      g.gc = realGc;
    });
    const line = Buffer.from(`${'x'.repeat(98)}\r\n`);
    // 1 MB of 100-byte lines keeping 1,000 rows leaves a pool of 5 slabs (640 KiB) once the model
    // caught up: less than the threshold alone, more than it for two sessions.
    const quiet = () => {
      const f = new Feeder({ post: () => {}, backpressure: () => {} }, 1000);
      let seq = 0;
      while (seq < 1e6) {
        const c = Buffer.alloc(4000);
        for (let o = 0; o < 4000; o += 100) line.copy(c, o);
        f.push(seq, c);
        seq += c.length;
      }
      f.flushAll();
      f.progress(seq);
      return f;
    };
    expect(5 * 128 * 1024).toBeLessThan(COLLECT_AFTER_DROPPED_BYTES);
    const a = quiet();
    vi.advanceTimersByTime(5000);
    expect(gc).not.toHaveBeenCalled();
    const b = quiet();
    // More sessions keep dropping less than a second apart (a flood runs): no collection yet.
    const more = [b];
    for (let i = 0; i < 4; i++) {
      vi.advanceTimersByTime(800);
      more.push(quiet());
    }
    expect(gc).not.toHaveBeenCalled();
    vi.advanceTimersByTime(5000);
    expect(gc).toHaveBeenCalledTimes(1);
    for (const f of [a, ...more]) f.dispose();
  });

  it('posts small output once it settles (never before the echo leaves) and waits for progress before the next batch', () => {
    const { f, posted } = harness(100);
    f.push(0, Buffer.from('a'));
    f.push(1, Buffer.from('b'));
    // Nothing goes to the worker in the turn the output arrived in.
    expect(posted).toEqual([]);
    vi.advanceTimersByTime(SETTLE_MS);
    // What arrived meanwhile goes as one batch.
    expect(posted).toEqual([{ seq: 0, data: 'ab' }]);
    f.push(2, Buffer.from('cd'));
    vi.advanceTimersByTime(SETTLE_MS);
    expect(posted).toEqual([{ seq: 0, data: 'ab' }]);
    // The model is done with the first batch: the rest settles too before it goes.
    f.progress(2);
    expect(posted).toEqual([{ seq: 0, data: 'ab' }]);
    vi.advanceTimersByTime(SETTLE_MS);
    expect(posted).toEqual([
      { seq: 0, data: 'ab' },
      { seq: 2, data: 'cd' },
    ]);
  });

  it('wakes the model once per pause of keys typed 2 ms apart, and at least every SETTLE_MAX_MS of a trickle', () => {
    const { f, posted } = harness(100);
    // A burst of 40 keys 2 ms apart (80 ms): nothing goes to the worker between two keys.
    for (let i = 0; i < 40; i++) {
      f.push(i, Buffer.from('k'));
      vi.advanceTimersByTime(2);
    }
    expect(posted).toEqual([]);
    vi.advanceTimersByTime(SETTLE_MS);
    expect(posted).toEqual([{ seq: 0, data: 'k'.repeat(40) }]);
    f.progress(40);
    // Output that never pauses (a key every 2 ms for a second) still reaches the model every
    // SETTLE_MAX_MS (+ one settle after its progress), never later.
    let done = 1;
    for (let i = 40; i < 540; i++) {
      f.push(i, Buffer.from('k'));
      vi.advanceTimersByTime(2);
      // The model parses each batch at once.
      for (; done < posted.length; done++) f.progress(posted[done]!.seq + posted[done]!.data.length);
    }
    const batches = posted.slice(1);
    expect(batches.length).toBeGreaterThanOrEqual(Math.floor(1000 / SETTLE_MAX_MS) - 1);
    expect(batches.length).toBeLessThanOrEqual(Math.ceil(1000 / SETTLE_MAX_MS) + 1);
    // No batch holds more than SETTLE_MAX_MS of keys (one per 2 ms).
    for (const b of batches) expect(b.data.length).toBeLessThanOrEqual(SETTLE_MAX_MS / 2 + SETTLE_MS);
  });

  it('skips plain text that would scroll out of the model, keeping seq exact', () => {
    const { f, posted } = harness(10);
    f.push(0, Buffer.from('x'));
    vi.advanceTimersByTime(SETTLE_MS);
    const flood = lines(1, 20_000);
    f.push(1, flood.subarray(0, 70_000));
    f.push(70_001, flood.subarray(70_000));
    f.progress(1);
    f.flushAll();
    const last = posted.at(-1)!;
    // Only the last 11 lines (retained + 1) are left; seq says where they start in the stream.
    expect(last.data).toBe(lines(19_990, 20_000).toString());
    expect(last.seq + last.data.length).toBe(1 + flood.length);
    expect(f.skippedBytes).toBe(flood.length - last.data.length);
  });

  it('skips coloured lines too, replaying their colour changes so the attributes stay exact', () => {
    const { f, posted } = harness(5);
    f.push(0, Buffer.from('a'));
    vi.advanceTimersByTime(SETTLE_MS);
    const colored = Buffer.concat([
      Buffer.from('\x1b[1m\x1b[0m\x1b[31m'),
      lines(1, 25_000),
      Buffer.from('\x1b[4;38;5;7m'),
      lines(25_001, 50_000),
    ]);
    f.push(1, colored);
    f.progress(1);
    f.flushAll();
    const last = posted.at(-1)!;
    // The reset drops the bold before it; red and the underline/colour survive, in order.
    expect(last.data).toBe(`\x1b[0m\x1b[31m\x1b[4;38;5;7m${lines(49_995, 50_000).toString()}`);
    // The batch still ends exactly at the stream's end.
    expect(last.seq + last.data.length).toBe(1 + colored.length);
    expect(f.skippedBytes).toBe(colored.length - lines(49_995, 50_000).length);
  });

  it('never skips across an escape sequence other than SGR', () => {
    for (const esc of ['\x1b[2J', '\x1b]0;title\x07', '\x1b[?1049h', '\x1b[31']) {
      const { f, posted } = harness(5);
      f.push(0, Buffer.from('a'));
      vi.advanceTimersByTime(SETTLE_MS);
      const data = Buffer.concat([lines(1, 100), Buffer.from(esc), lines(101, 50_000)]);
      f.push(1, data);
      f.progress(1);
      f.flushAll();
      // Everything before the escape may go; the escape and what follows stay.
      expect(posted.at(-1)!.data.startsWith(esc)).toBe(true);
      expect(f.skippedBytes).toBe(lines(1, 100).length);
    }
  });

  it('pauses the producer when escape-heavy output piles up past the hard limit, and resumes', () => {
    const { f, pressure } = harness(5);
    f.push(0, Buffer.from('a'));
    vi.advanceTimersByTime(SETTLE_MS);
    const chunk = Buffer.alloc(1024 * 1024, 0x1b);
    for (let i = 0; i < 40; i++) f.push(1 + i * chunk.length, chunk);
    expect(pressure).toEqual([true]);
    f.progress(1);
    f.flushAll();
    expect(pressure).toEqual([true, false]);
  });
});

describe('ModelFeeder memory', () => {
  it('keeps a long plain-text flood near the retained lines while the model is busy', () => {
    const posted: number[] = [];
    const f = new ModelFeeder({ post: (_s, d) => posted.push(d.length), backpressure: () => {} }, 100);
    f.push(0, Buffer.from('a'));
    let seq = 1;
    const chunk = Buffer.from('y\n'.repeat(2048));
    // 40 MiB of `yes` while the first batch is still being parsed.
    for (let i = 0; i < (40 * 1024 * 1024) / chunk.length; i++) {
      f.push(seq, chunk);
      seq += chunk.length;
    }
    expect(f.skippedBytes).toBeGreaterThan(38 * 1024 * 1024);
    f.progress(1);
    f.flushAll();
    expect(posted.at(-1)).toBeLessThan(2 * 1024 * 1024);
  });

  it('feeds a line flood every 5 s at most while it runs, and an escape-heavy flood at the eager pace', () => {
    vi.useFakeTimers();
    try {
      const run = (chunk: Buffer) => {
        // The model parses at ~30 MB/s.
        const { f, posted } = pacedFeeder(10_024, (bytes) => Math.ceil(bytes / 30_000));
        // 12 s of a 64 MB/s flood in 4 KB reads.
        flood(f, chunk, 12_000, 4, 64);
        f.dispose();
        return posted.map((p) => p.len);
      };
      const lines = run(Buffer.from(`${'x'.repeat(100)}\r\n`.repeat(40)));
      // The first small read, then one batch of the retained lines every 5 s.
      expect(lines.length).toBeLessThanOrEqual(4);
      expect(lines.reduce((a, b) => a + b, 0)).toBeLessThan(6 * 1024 * 1024);
      // Cursor movement cannot be skipped: the model gets all of it, without waiting.
      const tui = run(Buffer.from(`\x1b[H${'y'.repeat(100)}\r\n`.repeat(40)));
      expect(tui.reduce((a, b) => a + b, 0)).toBeGreaterThan(100 * 1024 * 1024);
    } finally {
      vi.useRealTimers();
    }
  });

  it('feeds a line flood as soon as it pauses', () => {
    vi.useFakeTimers();
    try {
      const { f, posted } = pacedFeeder(100, () => 1);
      // 3 s of 16 MB/s.
      const end = flood(f, Buffer.from(`${'x'.repeat(100)}\r\n`.repeat(40)), 3000, 10, 40);
      // The first read joined the flood (it grew past a flood before it settled); the flood waits while it runs.
      expect(posted).toHaveLength(0);
      // Output stopped: within two idle checks the model has everything up to the end.
      vi.advanceTimersByTime(200);
      expect(posted).toHaveLength(1);
      expect(posted[0]!.seq + posted[0]!.len).toBe(end);
      f.dispose();
    } finally {
      vi.useRealTimers();
    }
  });
});
