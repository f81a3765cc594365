import { describe, expect, it } from 'vitest';
import type { IPtyProvider, PtySpawnResult } from '../../provider/contract.js';
import { type FanoutSink, RelayFanout, SLOW_CONSUMER_CLOSE_CODE } from '../../relay/service/relay-fanout.js';

function sink(buffered: number) {
  const sent: number[] = [];
  const closed: number[] = [];
  const s: FanoutSink = {
    sendBinary: (parts) => sent.push(parts.reduce((n, p) => n + p.length, 0)),
    notify: () => {},
    bufferedAmount: buffered,
    close: (code) => closed.push(code ?? 0),
  };
  return { s, sent, closed };
}

const result: PtySpawnResult = {
  id: 'h/pty-1',
  pid: 1,
  incarnationId: 'inc',
  cols: 80,
  rows: 24,
  providerSequence: { value: 0, generation: 'continued' },
};
const provider = { acknowledgeDataEvent: () => {} } as unknown as IPtyProvider;

describe('RelayFanout slow consumers', () => {
  it('closes a connection that has more than the cap queued instead of sending it more', () => {
    const f = new RelayFanout(1024);
    const slow = sink(4096);
    const fast = sink(0);
    f.complete(f.bind(slow.s, 'h/pty-1', false), result, provider);
    f.complete(f.bind(fast.s, 'h/pty-1', false), result, provider);
    f.data({ id: 'h/pty-1', incarnationId: 'inc', seq: 0, data: Buffer.alloc(100) });
    expect(slow.closed).toEqual([SLOW_CONSUMER_CLOSE_CODE]);
    expect(slow.sent).toEqual([]);
    expect(fast.sent.length).toBe(1);
    f.data({ id: 'h/pty-1', incarnationId: 'inc', seq: 100, data: Buffer.alloc(100) });
    expect(fast.sent.length).toBe(2);
    expect(slow.closed).toHaveLength(1);
  });
});
