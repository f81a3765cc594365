import { describe, expect, it } from 'vitest';
import { rebuildModel, sameScreen } from '../../agent-stub/session/model-rebuild.js';
import { ModelEvents } from '../../agent-stub/session/model-rebuild-plan.js';
import { type ModelSnapshotData, TerminalModel } from '../../agent-stub/session/terminal-model.js';

const enc = (s: string) => Buffer.from(s, 'utf8');
const snap = (m: TerminalModel, rows?: number) => new Promise<ModelSnapshotData>((r) => m.snapshot(rows, r));
const fed = (m: TerminalModel, s: string) => new Promise<void>((r) => m.write(enc(s), r));

/** A seeded mix of lines, colours, wide characters, cursor moves and long wrapped rows. */
function output(seed: number, pieces: number): string[] {
  let x = seed;
  const rnd = (n: number) => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 8) % n;
  };
  const out: string[] = [];
  for (let i = 0; i < pieces; i++) {
    const kind = rnd(6);
    if (kind === 0) out.push(`\x1b[3${rnd(8)}mline ${i} ${'x'.repeat(rnd(200))}\x1b[0m\r\n`);
    else if (kind === 1) out.push(`${'漢字'.repeat(rnd(30))}\r\n`);
    else if (kind === 2) out.push(`\x1b[${1 + rnd(5)}A\x1b[2K redraw ${i}\x1b[${1 + rnd(5)}B\r`);
    else if (kind === 3) out.push(Array.from({ length: 40 }, (_, k) => `${i}.${k}\r\n`).join(''));
    else if (kind === 4) out.push(`\x1b[1;4mbold ${i}\x1b[22m under\r\n`);
    else out.push(`prompt$ ${'y'.repeat(rnd(90))}`);
  }
  return out;
}

describe('model scrollback: shrink and rebuild from the log', () => {
  it('shrink drops every scrollback row but keeps the screen', async () => {
    const m = new TerminalModel(80, 24, 10_000);
    for (const p of output(1, 1000)) await fed(m, p);
    const before = await snap(m, 0);
    expect(m.storedRows).toBeGreaterThan(300);
    expect(m.emulatorRows).toBeGreaterThan(100);
    m.shrink();
    const after = await snap(m, 0);
    expect(m.storedRows).toBe(0);
    expect(m.emulatorRows).toBe(0);
    expect(after).toEqual(before);
    // Nothing is kept while shrunk; unshrink keeps rows again from there.
    await fed(m, 'a\r\n'.repeat(100));
    expect(m.storedRows + m.emulatorRows).toBe(0);
    m.unshrink();
    await fed(m, 'b\r\n'.repeat(300));
    expect(m.storedRows).toBeGreaterThan(0);
    m.dispose();
  });

  it('a rebuilt model equals one that never shrank, resizes and clears included', async () => {
    for (const seed of [3, 17, 42]) {
      const pieces = output(seed, 600);
      const events = new ModelEvents(80, 24);
      const never = new TerminalModel(80, 24, 10_000);
      const log: Buffer[] = [];
      let seq = 0;
      for (const [i, p] of pieces.entries()) {
        const b = enc(p);
        log.push(b);
        seq += b.length;
        await fed(never, p);
        if (i === 200) {
          never.resize(60, 30);
          events.resize(seq, 60, 30);
        }
        if (i === 350) {
          never.resize(100, 20);
          events.resize(seq, 100, 20);
        }
        if (i === 500 && seed === 42) {
          never.clear();
          events.clear(seq);
        }
      }
      const steps = events.plan(0, Buffer.concat(log), 10_000 + 20);
      const rebuilt = await new Promise<TerminalModel>((r) => {
        const m: TerminalModel = rebuildModel(steps, 10_000, () => r(m));
      });
      const a = await snap(never);
      const b = await snap(rebuilt);
      expect(a.data.length).toBeGreaterThan(5000);
      expect(b).toEqual(a);
      expect(sameScreen(await snap(never, 0), await snap(rebuilt, 0))).toBe(true);
      never.dispose();
      rebuilt.dispose();
    }
  });

  it('a plan for a log that lost its start begins with the size in force there', () => {
    const events = new ModelEvents(80, 24);
    events.resize(100, 120, 40);
    events.clear(150);
    events.resize(300, 90, 30);
    const steps = events.plan(200, enc('z'.repeat(200)), 100);
    expect(steps.map((s) => s.kind)).toEqual(['size', 'data', 'resize', 'data']);
    expect(steps[0]).toEqual({ kind: 'size', cols: 120, rows: 40 });
    expect(steps[1]).toMatchObject({ kind: 'data' });
    expect((steps[1] as { data: Uint8Array }).data.length).toBe(100);
  });

  it('line floods in the log are skipped down to what the model keeps', () => {
    const events = new ModelEvents(80, 24);
    const flood = enc(Array.from({ length: 100_000 }, (_, i) => `${i}\r\n`).join(''));
    const [, data] = events.plan(0, flood, 1000);
    const kept = (data as { data: Uint8Array }).data;
    expect(kept.length).toBeLessThan(flood.length / 50);
    expect(Buffer.from(kept).toString().endsWith('99999\r\n')).toBe(true);
  });

  it('a rebuild from a log without its start shows another screen: sameScreen tells', async () => {
    const live = new TerminalModel(80, 24, 1000);
    await fed(live, '\x1b[2J\x1b[5;5Hboxed\x1b[10;1H');
    await fed(live, 'tail\r\n');
    const partial = await new Promise<TerminalModel>((r) => {
      const m: TerminalModel = rebuildModel(
        [
          { kind: 'size', cols: 80, rows: 24 },
          { kind: 'data', data: enc('tail\r\n') },
        ],
        1000,
        () => r(m),
      );
    });
    expect(sameScreen(await snap(live, 0), await snap(partial, 0))).toBe(false);
    live.dispose();
    partial.dispose();
  });
});
