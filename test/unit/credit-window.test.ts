import { describe, expect, it } from 'vitest';
import { CreditWindow } from '../../agent-stub/session/credit-window.js';
import { ProducerGate } from '../../agent-stub/session/producer-gate.js';

function setup(window = 100, grace = 1000) {
  const events: string[] = [];
  const gate = new ProducerGate(
    () => events.push('pause'),
    () => events.push('resume'),
  );
  return { gate, events, w: new CreditWindow(gate, window, grace) };
}

describe('CreditWindow', () => {
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
