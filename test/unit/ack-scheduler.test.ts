import { describe, expect, it } from 'vitest';
import { ACK_MAX_BYTES, ACK_MIN_BYTES, AckScheduler } from '../../relay/stub-link/ack-scheduler.js';

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
});
