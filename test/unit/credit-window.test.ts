import { describe, expect, it } from 'vitest';
import { CreditWindow } from '../../agent-stub/flow/credit-window.js';
import { ProducerGate } from '../../agent-stub/flow/producer-gate.js';
import { ringLimitFor } from '../../agent-stub/session/pty-session.js';

function setup(window = 100, grace = 1000) {
  const events: string[] = [];
  const gate = new ProducerGate(
    () => events.push('pause'),
    () => events.push('resume'),
  );
  return {
    gate,
    events,
    w: new CreditWindow(gate, { minBytes: window, maxBytes: () => window, graceMs: grace }),
  };
}

describe('CreditWindow', () => {
  it('with a log, a dropped link holds only once it is as far behind as the log is sure to keep', () => {
    const events: string[] = [];
    const gate = new ProducerGate(
      () => events.push('pause'),
      () => events.push('resume'),
    );
    const w = new CreditWindow(gate, {
      minBytes: 100,
      maxBytes: () => 100,
      graceMs: 1000,
      lostLinksHold: () => false,
      lostLinkBytes: () => 5000,
    });
    w.register('a', 0);
    w.lost('a', 0);
    // Far past its window: the program runs on into the log.
    w.advance(4999);
    expect(gate.paused).toBe(false);
    // As far behind as the log keeps: it waits for the link, so the reconnect replays exactly.
    w.advance(5000);
    expect(events).toEqual(['pause']);
    // The link comes back at what it had, and acknowledges the replay.
    w.register('a', 100);
    w.ack('a', 4950);
    expect(gate.paused).toBe(false);
    // Its grace over, a lost link holds nothing, however far behind.
    w.lost('a', 0);
    w.advance(20_000);
    expect(gate.paused).toBe(true);
    w.sweep(1000);
    expect(gate.paused).toBe(false);
  });

  it('pauses when a link falls a window behind and resumes on ack', () => {
    const { w, events, gate } = setup();
    w.register('a', 0);
    w.advance(99);
    expect(events).toEqual([]);
    w.advance(100);
    expect(events).toEqual(['pause']);
    w.ack('a', 50);
    expect(events).toEqual(['pause', 'resume']);
    expect(gate.paused).toBe(false);
    expect(w.unacked).toBe(50);
  });

  it('is held by the slowest of several links', () => {
    const { w, gate } = setup();
    w.register('a', 0);
    w.register('b', 0);
    w.advance(150);
    w.ack('a', 150);
    expect(gate.paused).toBe(true);
    w.ack('b', 100);
    expect(gate.paused).toBe(false);
  });

  it('keeps a lost link holding for the grace period, then lets go', () => {
    const { w, gate } = setup(100, 1000);
    w.register('a', 0);
    w.lost('a', 10);
    w.advance(500);
    expect(gate.paused).toBe(true);
    w.sweep(500);
    expect(gate.paused).toBe(true);
    w.sweep(1010);
    expect(gate.paused).toBe(false);
  });

  it('a re-registering link keeps its place and a goodbye releases at once', () => {
    const { w, gate } = setup();
    w.register('a', 0);
    w.lost('a', 0);
    w.advance(300);
    w.register('a', 250);
    expect(gate.paused).toBe(false);
    w.advance(400);
    expect(gate.paused).toBe(true);
    w.forget('a');
    expect(gate.paused).toBe(false);
    w.sweep(1e9);
    expect(gate.paused).toBe(false);
  });

  it('ignores acks for unknown links and acks beyond the head', () => {
    const { w, gate } = setup();
    w.ack('nobody', 10);
    w.register('a', 0);
    w.advance(100);
    w.ack('a', 1e9);
    expect(w.unacked).toBe(0);
    expect(gate.paused).toBe(false);
  });
});

describe('ProducerGate', () => {
  it('stays open for good once the program exited, whatever holds come later', () => {
    const events: string[] = [];
    const gate = new ProducerGate(
      () => events.push('pause'),
      () => events.push('resume'),
    );
    gate.hold('credit:a');
    gate.openForGood();
    gate.hold('credit:a');
    gate.hold('model');
    expect(gate.paused).toBe(false);
    expect(events).toEqual(['pause', 'resume']);
  });
});

/**
 * A link simulated in 1 ms steps: the producer writes as fast as the window lets it, the path
 * carries `bytesPerMs` and its acknowledgements arrive `rttMs` after the bytes were sent.
 */
function simulateLink(opts: { bytesPerMs: number; rttMs: number; ms: number; max?: number }) {
  let clock = 0;
  const gate = new ProducerGate(
    () => {},
    () => {},
  );
  const w = new CreditWindow(gate, {
    minBytes: 256 * 1024,
    maxBytes: () => opts.max ?? 2 * 1024 * 1024,
    graceMs: 1000,
    now: () => clock,
  });
  w.register('a', 0);
  let head = 0;
  let carried = 0;
  const inFlight: { seq: number; at: number }[] = [];
  const delivered: number[] = [];
  for (clock = 1; clock <= opts.ms; clock++) {
    // The program writes 64 KiB a millisecond unless held.
    if (!gate.paused) {
      head += 64 * 1024;
      w.advance(head);
    }
    carried = Math.min(head, carried + opts.bytesPerMs);
    inFlight.push({ seq: carried, at: clock + opts.rttMs });
    while (inFlight.length > 0 && inFlight[0]!.at <= clock) w.ack('a', inFlight.shift()!.seq);
    delivered.push(carried);
  }
  const lastSecond = delivered[delivered.length - 1]! - delivered[delivered.length - 1001]!;
  return { window: w.windowOf('a'), bytesPerSecond: lastSecond, unacked: w.unacked };
}

describe('CreditWindow pacing', () => {
  it("grows a fast link's window to ~20 ms of its output, within the maximum", () => {
    // Loopback-like: 60 MB/s, 1 ms round trip. A fixed 256 KiB window would ack every 64 KiB.
    const r = simulateLink({ bytesPerMs: 60_000, rttMs: 1, ms: 2000 });
    expect(r.window).toBeGreaterThanOrEqual(1_000_000);
    expect(r.window).toBeLessThanOrEqual(2 * 1024 * 1024);
  });

  it('keeps a slow link at the minimum window (bounded output in flight after an interrupt)', () => {
    // 1 MB/s over 20 ms: 20 ms of output is 20 KB, two round trips 40 KB: the minimum rules.
    const r = simulateLink({ bytesPerMs: 1_000, rttMs: 20, ms: 3000 });
    expect(r.window).toBe(256 * 1024);
    expect(r.unacked).toBeLessThanOrEqual(256 * 1024 + 64 * 1024);
  });

  it('grows a window-limited long path toward its bandwidth-delay product', () => {
    // 10 MB/s over 100 ms: a fixed 256 KiB window would cap it at ~2.6 MB/s.
    const r = simulateLink({ bytesPerMs: 10_000, rttMs: 100, ms: 6000 });
    expect(r.bytesPerSecond).toBeGreaterThan(8_000_000);
    expect(r.window).toBeGreaterThan(1_000_000);
  });

  it('never exceeds the maximum it is given (half the ring of a backgrounded session)', () => {
    const r = simulateLink({ bytesPerMs: 60_000, rttMs: 1, ms: 2000, max: 512 * 1024 });
    expect(r.window).toBe(512 * 1024);
    expect(r.unacked).toBeLessThanOrEqual(512 * 1024 + 64 * 1024);
  });
});

describe('ringLimitFor', () => {
  const FULL = 4 * 1024 * 1024;
  const BG = 512 * 1024;
  it('shrinks to the background ring only when every attached link is in the background and nobody claims credit', () => {
    expect(ringLimitFor([true, true], 0, FULL, BG)).toBe(BG);
    expect(ringLimitFor([true, false], 1, FULL, BG)).toBe(FULL);
    expect(ringLimitFor([], 0, FULL, BG)).toBe(FULL);
    // A foreground link dropped (its claim stands for the grace period): what it has not
    // acknowledged may be up to a 2 MiB window, so the full ring stays until the claim ends.
    expect(ringLimitFor([true], 1, FULL, BG)).toBe(FULL);
  });
});
