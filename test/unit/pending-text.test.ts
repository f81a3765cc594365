import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PendingText } from '../../relay/ahp/pending-text.js';

describe('PendingText', () => {
  it('holds at most the bound plus one piece, always the newest text, and says when older text went', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 50 }),
        fc.array(fc.string({ maxLength: 30 })),
        (limit, pieces) => {
          const p = new PendingText(limit);
          let whole = '';
          let dropped = false;
          for (const piece of pieces) {
            dropped = p.push(piece) || dropped;
            whole += piece;
          }
          const taken = p.take();
          if (pieces.length === 0) {
            expect(taken).toBeUndefined();
            return;
          }
          expect(taken).toBeDefined();
          const { text, cut } = taken!;
          expect(whole.endsWith(text)).toBe(true);
          expect(text.length).toBeGreaterThanOrEqual(Math.min(limit, whole.length));
          expect(text.length).toBeLessThanOrEqual(limit + Math.max(...pieces.map((x) => x.length)));
          // Older text goes only when what stays fills the bound (so the content before it is beyond it).
          if (text.length < whole.length) expect(cut).toBe(true);
          if (cut) expect(text.length).toBeGreaterThanOrEqual(limit);
          expect(cut).toBe(dropped);
          expect(p.take()).toBeUndefined();
        },
      ),
    );
  });

  it('keeps a flood that nobody reads to the bound', () => {
    const p = new PendingText(1000);
    for (let i = 0; i < 100_000; i++) p.push('0123456789');
    const taken = p.take()!;
    expect(taken.text.length).toBe(1000);
    expect(taken.cut).toBe(true);
  });
});
