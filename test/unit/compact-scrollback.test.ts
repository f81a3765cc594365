import { describe, expect, it } from 'vitest';
import { CompactScrollback } from '../../agent-stub/session/compact-scrollback.js';

describe('CompactScrollback', () => {
  it('renders rows joined by CRLF, and soft-wrapped continuations of full rows without a break', () => {
    const s = new CompactScrollback(100);
    s.push('first', false, false);
    s.push('abcd', false, true);
    s.push('efgh', true, true);
    s.push('next', true, false); // wrapped, and the row before is full: joined
    s.push('after', true, false); // wrapped, but the row before is not full: a break
    expect(s.render()).toBe('first\r\nabcdefghnext\r\nafter');
    expect(s.render(2)).toBe('next\r\nafter');
    expect(s.render(3)).toBe('efghnext\r\nafter');
    expect(s.render(0)).toBe('');
    expect(s.isFull(0)).toBe(false);
    expect(s.isFull(2)).toBe(true);
    expect(s.render(2, 1)).toBe('efghnext');
    s.dropNewest(2);
    expect(s.render()).toBe('first\r\nabcdefgh');
    s.push('tail', false, false);
    expect(s.render()).toBe('first\r\nabcdefgh\r\ntail');
  });

  it('keeps only the newest rows and frees storage as old rows leave', () => {
    const s = new CompactScrollback(1000);
    const row = (i: number) => `row ${i} ${'é中'.repeat(i % 50)}`;
    for (let i = 0; i < 20_000; i++) s.push(row(i), false, false);
    expect(s.rows).toBe(1000);
    const lines = s.render().split('\r\n');
    expect(lines).toHaveLength(1000);
    expect(lines[0]).toBe(row(19_000));
    expect(lines.at(-1)).toBe(row(19_999));
    // ~1000 rows of ≤ 160 bytes: a few 64 KiB chunks, not the ~3 MB pushed in total.
    expect(s.storedBytes).toBeLessThanOrEqual(4 * 64 * 1024);
  });

  it('clears, shrinks, and stores nothing with a zero budget', () => {
    const s = new CompactScrollback(10);
    for (let i = 0; i < 10; i++) s.push(`r${i}`, false, false);
    s.setMaxRows(3);
    expect(s.render()).toBe('r7\r\nr8\r\nr9');
    s.clear();
    expect(s.rows).toBe(0);
    expect(s.render()).toBe('');
    s.push('again', true, false);
    expect(s.render()).toBe('again');
    const none = new CompactScrollback(0);
    none.push('x', false, false);
    expect(none.rows).toBe(0);
  });

  it('keeps rows longer than a storage chunk intact', () => {
    const s = new CompactScrollback(5);
    const long = 'x'.repeat(150_000);
    s.push('a', false, false);
    s.push(long, false, false);
    s.push('b', false, false);
    expect(s.render()).toBe(`a\r\n${long}\r\nb`);
  });

  it('matches a plain list of rows under random pushes, drops and clears', () => {
    let seed = 1;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let round = 0; round < 60; round++) {
      const max = 1 + rnd(300);
      const s = new CompactScrollback(max);
      const rows: string[] = [];
      for (let step = 0; step < 400; step++) {
        const op = rnd(10);
        if (op < 7) {
          const t = `${step}:${'x'.repeat(rnd(3) === 0 ? rnd(70_000) : rnd(100))}`.slice(
            0,
            rnd(4) === 0 ? 0 : undefined,
          );
          s.push(t, false, false);
          rows.push(t);
          if (rows.length > max) rows.shift();
        } else if (op < 9) {
          const n = rnd(20);
          s.dropNewest(n);
          rows.splice(Math.max(0, rows.length - n));
        } else if (rnd(5) === 0) {
          s.clear();
          rows.length = 0;
        }
        expect(s.rows).toBe(rows.length);
        if (step % 40 === 0) expect(s.render()).toBe(rows.join('\r\n'));
      }
      expect(s.render(7, 3)).toBe(
        rows.slice(Math.max(0, rows.length - 10), Math.max(0, rows.length - 3)).join('\r\n'),
      );
    }
  });
});
