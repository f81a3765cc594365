import { describe, expect, it } from 'vitest';
import { OutputRing } from '../../agent-stub/history/output-ring.js';

/**
 * Byte-exact comparison without vitest's element-wise diff of large buffers, which took most of
 * a 30 s timeout on a loaded machine; on a mismatch it reports the first differing offset.
 */
function expectBytes(got: Buffer | undefined, want: Buffer): void {
  expect(got).toBeDefined();
  if (got!.equals(want)) return;
  let i = 0;
  while (i < Math.min(got!.length, want.length) && got![i] === want[i]) i++;
  expect({ length: got!.length, firstDiff: i }).toEqual({ length: want.length, firstDiff: want.length });
}

function bytes(from: number, len: number): Buffer {
  const b = Buffer.alloc(len);
  for (let i = 0; i < len; i++) b[i] = (from + i) & 0xff;
  return b;
}

describe('OutputRing', () => {
  it('returns exact ranges before wraparound', () => {
    const r = new OutputRing(16);
    r.append(bytes(0, 10));
    expect(r.head).toBe(10);
    expect(r.start).toBe(0);
    expectBytes(r.slice(3, 7), bytes(3, 4));
    expectBytes(r.slice(0), bytes(0, 10));
  });

  it('wraps around and keeps the last capacity bytes exact', () => {
    const r = new OutputRing(16);
    let seq = 0;
    for (const n of [5, 7, 9, 3, 11, 1, 16, 2]) {
      r.append(bytes(seq, n));
      seq += n;
      expect(r.head).toBe(seq);
      expect(r.start).toBe(Math.max(0, seq - 16));
      for (let from = r.start; from <= seq; from++) expectBytes(r.slice(from, seq), bytes(from, seq - from));
    }
  });

  it('refuses ranges that were overwritten or lie in the future', () => {
    const r = new OutputRing(8);
    r.append(bytes(0, 20));
    expect(r.start).toBe(12);
    expect(r.slice(11)).toBeUndefined();
    expect(r.has(11)).toBe(false);
    expect(r.has(12)).toBe(true);
    expect(r.slice(12, 21)).toBeUndefined();
    expect(r.slice(15, 14)).toBeUndefined();
    expect(r.slice(20)).toEqual(Buffer.alloc(0));
  });

  it('handles one append larger than the capacity', () => {
    const r = new OutputRing(8);
    r.append(bytes(0, 3));
    r.append(bytes(3, 30));
    expect(r.head).toBe(33);
    expectBytes(r.slice(25), bytes(25, 8));
  });

  it('matches a reference model under random appends', () => {
    let state = 12345;
    const rand = (n: number) => {
      state = (state * 1103515245 + 12345) & 0x7fffffff;
      return state % n;
    };
    const cap = 37;
    const r = new OutputRing(cap);
    const all: number[] = [];
    for (let i = 0; i < 500; i++) {
      const chunk = bytes(all.length, rand(50));
      r.append(chunk);
      all.push(...chunk);
      const from = Math.max(0, all.length - cap) + rand(Math.min(cap, all.length) + 1);
      expectBytes(r.slice(from), Buffer.from(all.slice(from)));
    }
  });

  it('grows its memory with use and stays exact across limit changes', () => {
    const r = new OutputRing(1024 * 1024);
    expect(r.allocated).toBeLessThanOrEqual(64 * 1024);
    let seq = 0;
    let seed = 5;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let step = 0; step < 400; step++) {
      if (rnd(25) === 0) r.setLimit([4096, 100_000, 1024 * 1024, 300_000][rnd(4)]);
      const n = rnd(20_000);
      r.append(bytes(seq, n));
      seq += n;
      expect(r.head).toBe(seq);
      expect(r.start).toBeGreaterThanOrEqual(Math.max(0, seq - r.capacity));
      expect(r.allocated).toBeLessThanOrEqual(Math.max(64 * 1024, r.capacity));
      const from = r.start + rnd(seq - r.start + 1);
      expectBytes(r.slice(from), bytes(from, seq - from));
    }
  });

  it('drops the oldest bytes and frees memory when its limit is lowered', () => {
    const r = new OutputRing(1024 * 1024);
    r.append(bytes(0, 1024 * 1024));
    expect(r.allocated).toBe(1024 * 1024);
    r.setLimit(100_000);
    expect(r.allocated).toBe(100_000);
    expect(r.start).toBe(1024 * 1024 - 100_000);
    expectBytes(r.slice(r.start), bytes(r.start, 100_000));
    expect(r.slice(r.start - 1)).toBeUndefined();
    r.setLimit(1024 * 1024);
    r.append(bytes(1024 * 1024, 10));
    expectBytes(r.slice(1024 * 1024 - 100_000), bytes(1024 * 1024 - 100_000, 100_010));
  });
});
