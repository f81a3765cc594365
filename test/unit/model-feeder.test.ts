import { describe, expect, it } from 'vitest';
import { ModelFeeder } from '../../agent-stub/session/model-feeder.js';

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

const lines = (from: number, to: number) => {
  let s = '';
  for (let i = from; i <= to; i++) s += `line ${i}\r\n`;
  return Buffer.from(s);
};

describe('ModelFeeder', () => {
  it('posts small output at once and waits for progress before the next batch', () => {
    const { f, posted } = harness(100);
    f.push(0, Buffer.from('ab'));
    f.push(2, Buffer.from('cd'));
    expect(posted).toEqual([{ seq: 0, data: 'ab' }]);
    f.progress(2);
    expect(posted).toEqual([
      { seq: 0, data: 'ab' },
      { seq: 2, data: 'cd' },
    ]);
  });

  it('skips plain text that would scroll out of the model, keeping seq exact', () => {
    const { f, posted } = harness(10);
    f.push(0, Buffer.from('x'));
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

  it('never skips across an escape sequence', () => {
    const { f, posted } = harness(5);
    f.push(0, Buffer.from('a'));
    const colored = Buffer.concat([Buffer.from('\x1b[31m'), lines(1, 50_000)]);
    f.push(1, colored);
    f.progress(1);
    f.flushAll();
    expect(posted.at(-1)!.data.startsWith('\x1b[31m')).toBe(true);
    expect(f.skippedBytes).toBe(0);
  });

  it('pauses the producer when escape-heavy output piles up past the hard limit, and resumes', () => {
    const { f, pressure } = harness(5);
    f.push(0, Buffer.from('a'));
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
});
