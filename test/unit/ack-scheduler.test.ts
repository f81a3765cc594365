import { describe, expect, it, vi } from 'vitest';
import {
  ACK_IDLE_MS,
  ACK_MAX_BYTES,
  ACK_MIN_BYTES,
  AckScheduler,
} from '../../provider/flow/ack-scheduler.js';

describe('AckScheduler', () => {
  it('acks a slow session every 64 KiB and a fast one after ~5 ms of its output', () => {
    let clock = 0;
    const sent: number[] = [];
    const acks = new AckScheduler(
      (_id, seq) => {
        sent.push(seq);
        return true;
      },
      () => clock,
    );
    // 2 MB/s: 5 ms of output is 10 KB, so the 64 KiB floor rules.
    for (clock = 1; clock <= 200; clock++) acks.queue('slow', clock * 2000);
    expect(acks.eagerBytes('slow', 400_000)).toBe(ACK_MIN_BYTES);
    const slowAcks = sent.length;
    expect(slowAcks).toBeGreaterThanOrEqual(5);
    // 60 MB/s: an ack per ~300 KB, not per 64 KiB (~940 a second).
    sent.length = 0;
    for (clock = 201; clock <= 1200; clock++) acks.queue('fast', (clock - 200) * 60_000);
    expect(acks.eagerBytes('fast', 60_000_000)).toBeGreaterThan(250_000);
    expect(acks.eagerBytes('fast', 60_000_000)).toBeLessThanOrEqual(ACK_MAX_BYTES);
    expect(sent.length).toBeLessThan(300);
    expect(sent.length).toBeGreaterThan(100);
    acks.dispose();
  });

  it('lets an echo’s credit ride with the next keystroke instead of going alone', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const sent: string[] = [];
      const acks = new AckScheduler((id, seq) => {
        sent.push(`${id}@${seq}`);
        return true;
      });
      // Echoes of a typist, 100 ms apart: nothing goes alone between keystrokes.
      for (let i = 1; i <= 5; i++) {
        acks.queue('a', i);
        acks.queue('other-host', i);
        vi.advanceTimersByTime(100);
      }
      expect(sent).toEqual([]);
      // A keystroke on a's link: a's credit joins it, the other host's waits for its own link.
      acks.rideWith((id) => id === 'a');
      expect(sent).toEqual(['a@5']);
      // With nothing to ride, it goes alone after ACK_IDLE_MS (measured from the first pending ack).
      vi.advanceTimersByTime(ACK_IDLE_MS);
      expect(sent).toEqual(['a@5', 'other-host@5']);
      // Credit past ACK_MIN_BYTES but short of the eager size (a fast session's remainder) waits only ~5 ms.
      sent.length = 0;
      acks.queue('fast', 1);
      for (let t = 0; t < 30; t++) {
        vi.advanceTimersByTime(1);
        acks.queue('fast', (t + 1) * 100_000);
      }
      const eager = sent.length;
      expect(eager).toBeGreaterThan(0);
      acks.queue('fast', 30 * 100_000 + ACK_MIN_BYTES + 1);
      vi.advanceTimersByTime(5);
      expect(sent.length).toBe(eager + 1);
      acks.dispose();
    } finally {
      vi.useRealTimers();
    }
  });
});
