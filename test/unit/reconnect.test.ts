import { describe, expect, it } from 'vitest';
import { RECONNECT_STEPS_MS, ReconnectLadder } from '../../provider/reconnect-ladder.js';
import { LinkHealth } from '../../relay/stub-link/link-health.js';

describe('ReconnectLadder', () => {
  it('climbs the steps, repeats the last one, and applies bounded jitter', () => {
    const mid = new ReconnectLadder({ random: () => 0.5 });
    const delays = Array.from({ length: RECONNECT_STEPS_MS.length + 3 }, () => mid.next()!.delayMs);
    expect(delays).toEqual([...RECONNECT_STEPS_MS, 30_000, 30_000, 30_000]);
    const low = new ReconnectLadder({ random: () => 0, steps: [500] });
    const high = new ReconnectLadder({ random: () => 0.999999, steps: [500] });
    expect(low.next()!.delayMs).toBe(400);
    expect(high.next()!.delayMs).toBe(600);
  });

  it('counts attempts and gives up only when told to', () => {
    const l = new ReconnectLadder({ giveUpAfter: 3, random: () => 0.5 });
    expect([l.next()?.attempt, l.next()?.attempt, l.next()?.attempt, l.next()]).toEqual([1, 2, 3, undefined]);
    const forever = new ReconnectLadder();
    for (let i = 0; i < 1000; i++) expect(forever.next()).toBeDefined();
  });

  it('starts from the bottom after any successful connect, however short the link stayed up', () => {
    const l = new ReconnectLadder({ random: () => 0.5 });
    for (let i = 0; i < 30; i++) l.next();
    expect(l.next()!.delayMs).toBe(RECONNECT_STEPS_MS.at(-1));
    l.connected(0);
    l.disconnected(1);
    expect(l.next()!.delayMs).toBe(RECONNECT_STEPS_MS[0]);
    expect(l.next()!.delayMs).toBe(RECONNECT_STEPS_MS[1]);
    // Failed attempts without a connect in between keep climbing.
    l.disconnected(2);
    expect(l.next()!.delayMs).toBe(RECONNECT_STEPS_MS[2]);
  });
});

describe('LinkHealth', () => {
  const T = 15_000;
  function run(h: LinkHealth, from: number, to: number, step = 1000): string[] {
    const out: string[] = [];
    for (let t = from + step; t <= to; t += step) out.push(`${t}:${h.tick(t, step)}`);
    return out.filter((s) => !s.endsWith(':ok'));
  }

  it('probes after 5 s of silence and is dead only after T of silence with the probe unanswered', () => {
    const h = new LinkHealth(0, { deadAfterMs: T });
    const verdicts = run(h, 0, 25_000);
    expect(verdicts[0]).toBe('5000:probe');
    expect(verdicts.find((v) => v.endsWith('dead'))).toBe('20000:dead');
  });

  it('is never dead while bytes keep arriving', () => {
    const h = new LinkHealth(0, { deadAfterMs: T });
    h.sent(0);
    for (let t = 1000; t <= 60_000; t += 1000) {
      if (t % 4000 === 0) h.received(t);
      expect(h.tick(t, 1000)).not.toBe('dead');
    }
  });

  it('is not dead after silence when nothing awaits an answer until a probe goes out', () => {
    const h = new LinkHealth(0, { deadAfterMs: T, probeIdleMs: 100_000 });
    expect(run(h, 0, 30_000)).toEqual([]);
  });

  it('suspends the verdict after a clock jump until a fresh probe had time to answer', () => {
    const h = new LinkHealth(0, { deadAfterMs: T });
    h.sent(0);
    expect(h.tick(1000, 1000)).toBe('ok');
    // 10 minutes asleep: everything looks silent, but the verdict must wait.
    expect(h.tick(601_000, 1000)).toBe('probe');
    expect(h.tick(602_000, 1000)).toBe('ok');
    h.received(602_500);
    expect(run(h, 602_000, 606_000)).toEqual([]);
    const h2 = new LinkHealth(0, { deadAfterMs: T });
    expect(h2.tick(601_000, 1000)).toBe('probe');
    const later = run(h2, 601_000, 601_000 + T + 1000);
    expect(later[0]).toBe(`${601_000 + T}:dead`);
  });
});
