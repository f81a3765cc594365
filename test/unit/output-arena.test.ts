import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OutputArena, SLAB_BYTES, type StoredText } from '../../relay/ahp/output-arena.js';

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

describe('OutputArena (the action log settled output)', () => {
  it('reads back what it stored: ASCII, multi-byte UTF-8, and a text too large for a slab', () => {
    const arena = new OutputArena();
    const texts = ['plain', 'é€😀 and \u001b[31mred\u001b[0m', 'x'.repeat(SLAB_BYTES)];
    const stored = texts.map((t) => arena.store(t));
    expect(stored.map((s) => arena.read(s))).toEqual(texts);
    expect(stored[1]!.length).toBe(Buffer.byteLength(texts[1]!));
    // The two small ones share a slab; the large one has a buffer of its own.
    expect(stored[0]!.buf).toBe(stored[1]!.buf);
    expect(stored[2]!.slab).toBeUndefined();
    expect(arena.slabsAllocated).toBe(1);
  });

  it('keeps every text that is not released intact, whatever is stored and released around it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({
              op: fc.constant('store' as const),
              text: fc.string({ unit: 'binary', maxLength: 20_000 }),
            }),
            fc.record({ op: fc.constant('release' as const), pick: fc.nat() }),
            fc.record({ op: fc.constant('turn' as const) }),
          ),
          { maxLength: 120 },
        ),
        async (ops) => {
          const arena = new OutputArena();
          const live: Array<{ text: string; at: StoredText }> = [];
          for (const o of ops) {
            if (o.op === 'store') live.push({ text: o.text, at: arena.store(o.text) });
            else if (o.op === 'release' && live.length > 0) {
              const [gone] = live.splice(o.pick % live.length, 1);
              arena.release(gone!.at);
            } else if (o.op === 'turn') await nextTurn();
            for (const l of live) expect(arena.read(l.at)).toBe(l.text);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('reuses its slabs: 64 MiB through a 1 MiB window allocates a handful', async () => {
    const arena = new OutputArena();
    const window: StoredText[] = [];
    const chunk = 'y\r\n'.repeat(1365); // 4 KiB
    for (let i = 0; i < 16 * 1024; i++) {
      window.push(arena.store(chunk));
      if (window.length > 256) arena.release(window.shift()!);
      if (i % 64 === 0) await nextTurn();
    }
    expect(arena.read(window.at(-1)!)).toBe(chunk);
    expect(arena.slabsAllocated).toBeLessThanOrEqual((1024 * 1024) / SLAB_BYTES + 4);
  });

  it('reuses an emptied slab only after the turn (a held delivery still reads it), and a stale read then throws', async () => {
    const arena = new OutputArena();
    const piece = 'b'.repeat(SLAB_BYTES / 4); // four to a slab
    const fill = (n: number) => Array.from({ length: n }, () => arena.store(piece));
    const first = fill(4);
    const [c] = fill(1); // the second slab
    for (const t of first) arena.release(t);
    // The first slab is empty, but not reused in this turn: the next slab is a third one.
    fill(3);
    const [d] = fill(1);
    expect(arena.slabsAllocated).toBe(3);
    expect(arena.read(first[0]!)).toBe(piece);
    await nextTurn();
    fill(3);
    const [e] = fill(1); // the first slab again
    expect(arena.slabsAllocated).toBe(3);
    expect(e!.buf).toBe(first[0]!.buf);
    expect(() => arena.read(first[0]!)).toThrow(/overwritten/);
    expect([c, d, e].map((t) => arena.read(t!))).toEqual([piece, piece, piece]);
  });

  it('keeps a slab retired after a hold began out of use until that hold ran, whatever was retired before it', async () => {
    const arena = new OutputArena();
    const piece = 'c'.repeat(SLAB_BYTES / 4);
    const fill = (n: number) => Array.from({ length: n }, () => arena.store(piece));
    const first = fill(4);
    const second = fill(4);
    fill(1); // a third slab is the current one
    for (const t of first) arena.release(t); // the first slab retires
    // Output arrives in an immediate before the hold's (a channel's feed) and needs a new slab.
    const fed = new Promise<void>((r) => setImmediate(() => r(void fill(4))));
    // A delivery held until a reply went out reads an envelope of the second slab...
    const held = new Promise<string>((r) =>
      setImmediate(() => {
        try {
          r(arena.read(second[0]!));
        } catch (err) {
          r((err as Error).message);
        }
      }),
    );
    // ...which the log evicts in the same turn.
    for (const t of second) arena.release(t);
    await fed;
    expect(await held).toBe(piece);
  });
});
