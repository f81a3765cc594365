import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ClientInputQueue } from '../../provider/client/client-input-queue.js';
import { ClientStreams } from '../../provider/client/client-streams.js';
import { RelayLink } from '../../provider/client/relay-link.js';
import type { InputAckParams, WireAttachResult } from '../../provider/client/relay-protocol.js';
import type { LinkState, PtyDataEvent, PtyReattachEvent } from '../../provider/contract.js';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import { InputQueue } from '../../provider/input/input-queue.js';
import { FrameType } from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { InputLedger } from '../../relay/input/input-ledger.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (events: PtyDataEvent[]) => events.map((e) => new TextDecoder().decode(e.data)).join('');

describe('InputLedger (relay side of exactly-once input)', () => {
  it('applies each inputSeq once, acks in order, and re-reports failures of resent frames', () => {
    const l = new InputLedger();
    const acks: InputAckParams[] = [];
    l.sink = (a) => acks.push(a);
    expect([5, 6, 7].map((s) => l.receive(s))).toEqual([true, true, true]);
    l.finish(6);
    expect(acks).toEqual([]); // 5 still in flight
    l.finish(5);
    l.finish(7, new PtyRelayError('NOT_OWNER', 'not yours'));
    expect(acks.map((a) => a.upTo)).toEqual([6, 7]);
    expect(acks[1].failed?.[0]).toMatchObject({ inputSeq: 7, error: { code: 'NOT_OWNER' } });
    // Resent after a reconnect: not applied again, acknowledged again (with its failure).
    expect(l.receive(6)).toBe(false);
    expect(l.receive(7)).toBe(false);
    expect(acks.at(-1)).toMatchObject({ upTo: 7, failed: [{ inputSeq: 7 }] });
    expect(l.receive(8)).toBe(true);
  });
});

describe('ClientInputQueue (client side)', () => {
  it('queues while disconnected up to 64 KiB per session, resends with the same inputSeq', async () => {
    const sent: number[] = [];
    let open = false;
    const q = new ClientInputQueue((f) => {
      if (!open) return false;
      const [frame] = new FrameDecoder().push(f);
      if (frame.type === FrameType.Input) sent.push(frame.inputSeq);
      return true;
    });
    const a = q.submit('local/pty-1', bytes('ab'));
    const full = await q.submit('local/pty-1', new Uint8Array(64 * 1024)).catch((e) => e);
    expect(isPtyRelayError(full, 'INPUT_QUEUE_FULL')).toBe(true);
    open = true;
    q.connected('relay-A', true);
    const b = q.submit('local/pty-1', bytes('c'));
    expect(sent).toEqual([1, 2]);
    q.disconnected();
    q.connected('relay-A', false); // same relay, it knows this instance: resend everything pending
    expect(sent).toEqual([1, 2, 1, 2]);
    q.onAck({ upTo: 2 });
    await Promise.all([a, b]);
  });

  it('fails input that a relay which lost its record may already have applied', async () => {
    const q = new ClientInputQueue(() => true);
    q.connected('relay-A', true);
    const inFlight = q.submit('local/pty-1', bytes('x'));
    q.disconnected();
    const queued = q.submit('local/pty-1', bytes('y'));
    q.connected('relay-B', true);
    const err = await inFlight.catch((e) => e);
    expect(isPtyRelayError(err, 'LINK_CLOSED')).toBe(true);
    expect(err.details).toEqual({ maybeApplied: true });
    q.onAck({ upTo: 2 });
    await queued;
  });

  it('resends input in flight to a relay that forwards origins, marked as resent, and nothing twice', async () => {
    const sent: [number, number][] = [];
    const q = new ClientInputQueue((f) => {
      const [frame] = new FrameDecoder().push(f);
      if (frame.type === FrameType.Input || frame.type === FrameType.InputResent)
        sent.push([frame.type, frame.inputSeq]);
      return true;
    });
    q.connected('relay-A', true, true);
    const inFlight = q.submit('local/pty-1', bytes('x'));
    q.disconnected();
    const queued = q.submit('local/pty-1', bytes('y'));
    q.connected('relay-B', true, true);
    expect(sent).toEqual([
      [FrameType.Input, 1],
      [FrameType.InputResent, 1],
      [FrameType.Input, 2],
    ]);
    q.onAck({ upTo: 2 });
    await Promise.all([inFlight, queued]);
  });
});

describe('InputQueue refusals', () => {
  it('fails a frame its target refuses, keeps the order of the rest, and never sends the refused one', async () => {
    const sent: string[] = [];
    const q = new InputQueue({
      send: (p) => {
        sent.push(new TextDecoder().decode(p.data));
        return true;
      },
      refuse: (p) =>
        p.resent ? new PtyRelayError('LINK_CLOSED', 'refused', { maybeApplied: true }) : undefined,
    });
    q.connected('A');
    const first = q.submit('pty-1', bytes('a'));
    const second = q.submit('pty-1', bytes('b'));
    q.disconnected();
    q.connected('B', true, true);
    for (const p of [first, second]) {
      const err = await p.catch((e) => e);
      expect(isPtyRelayError(err, 'LINK_CLOSED')).toBe(true);
    }
    const third = q.submit('pty-1', bytes('c'));
    expect(sent).toEqual(['a', 'b', 'c']);
    expect(q.pendingCount).toBe(1);
    q.onAck({ upTo: 3 });
    await third;
  });
});

describe('ClientStreams (delivery guards)', () => {
  const wire = (over: Partial<WireAttachResult> = {}): WireAttachResult => ({
    id: 'local/pty-1',
    pid: 1,
    incarnationId: 'inc-1',
    cols: 80,
    rows: 24,
    providerSequence: { value: 10, generation: 'continued' },
    ...over,
  });
  const data = (seq: number, s: string, incarnationId = 'inc-1') => ({
    kind: 'data' as const,
    e: { id: 'local/pty-1', incarnationId, seq, data: bytes(s) },
  });

  it('cuts the replay out of the frames that preceded the result, trims overlaps, drops stale incarnations', () => {
    const s = new ClientStreams();
    const got: PtyDataEvent[] = [];
    s.data.on((e) => got.push(e));
    const buf = s.beginAttach('local/pty-1');
    s.push(data(4, 'efghij')); // the replay frame [4, 10)
    s.push(data(10, 'KL')); // live, overtook the result
    s.push(data(0, 'zzzz', 'inc-0')); // an old incarnation
    const r = s.settleExplicit(wire({ replayFromSeq: 4, replayBytes: 6 }), buf);
    s.endAttach('local/pty-1', buf);
    expect(new TextDecoder().decode(r.replay)).toBe('efghij');
    s.push(data(11, 'LMN')); // overlaps by one byte
    s.push(data(12, 'MN')); // pure duplicate
    expect(text(got)).toBe('KLMN');
    expect(got.map((e) => e.seq)).toEqual([10, 12]);
  });

  it('a reset re-attach emits onReattach with the snapshot, then the replay from its seq', () => {
    const s = new ClientStreams();
    const got: PtyDataEvent[] = [];
    const resets: PtyReattachEvent[] = [];
    s.data.on((e) => got.push(e));
    s.reattach.on((e) => resets.push(e));
    s.settleExplicit(wire(), s.beginAttach('local/pty-1'));
    const buf = s.beginAttach('local/pty-1');
    s.push(data(7, 'hij'));
    const snapshot = { data: 'SCREEN', cols: 80, rows: 24, seq: 7, alternateScreen: false };
    s.settleReattach(
      wire({
        providerSequence: { value: 10, generation: 'reset' },
        snapshot,
        replayFromSeq: 7,
        replayBytes: 3,
      }),
      buf,
    );
    expect(resets).toEqual([{ id: 'local/pty-1', incarnationId: 'inc-1', generation: 'reset', snapshot }]);
    expect(got.map((e) => [e.seq, new TextDecoder().decode(e.data)])).toEqual([[7, 'hij']]);
  });
  it('never delivers a hole: a chunk past the next byte is held back and asks for a re-attach', () => {
    const s = new ClientStreams();
    const got: PtyDataEvent[] = [];
    const holes: { id: string; seq: number; got: number }[] = [];
    s.data.on((e) => got.push(e));
    s.hole.on((h) => holes.push(h));
    const first = s.beginAttach('local/pty-1');
    s.settleExplicit(wire(), first);
    s.endAttach('local/pty-1', first);
    s.push(data(10, 'ab'));
    s.push(data(20, 'zz'));
    expect(text(got)).toBe('ab');
    expect(holes).toEqual([{ id: 'local/pty-1', seq: 12, got: 20 }]);
    // The re-attach from 12 replays the missing bytes exactly; the stream goes on from there.
    const buf = s.beginAttach('local/pty-1');
    s.push(data(12, 'cdefghijkl'));
    s.settleReattach(
      wire({ providerSequence: { value: 22, generation: 'continued' }, replayFromSeq: 12 }),
      buf,
    );
    s.endAttach('local/pty-1', buf);
    s.push(data(20, 'klmn'));
    expect(text(got)).toBe('abcdefghijklmn');
    expect(holes).toHaveLength(1);
  });

  it('an undecodable binary message is reported, not swallowed', () => {
    const s = new ClientStreams();
    const errors: Error[] = [];
    s.malformed.on((e) => errors.push(e));
    s.pushBinary(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x01, 0x02]));
    expect(errors).toHaveLength(1);
  });
});

describe('RelayLink', () => {
  it('reports connecting, then reconnecting on the ladder, then lost after connectAttempts', async () => {
    const srv = createServer((s) => s.destroy());
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as { port: number }).port;
    const states: LinkState[] = [];
    const link = new RelayLink(
      {
        url: `ws://127.0.0.1:${port}`,
        token: 't',
        reconnect: { connectAttempts: 3, steps: [10, 20], jitter: 0 },
      },
      { handshake: async () => {}, notification: () => {}, binary: () => {}, dropped: () => {} },
    );
    link.states.on((s) => states.push(s));
    const err = await link.whenConnected().catch((e) => e);
    expect(isPtyRelayError(err, 'CONNECT_FAILED')).toBe(true);
    expect(states.map((s) => s.state)).toEqual(['connecting', 'reconnecting', 'reconnecting', 'lost']);
    expect(states.slice(1, 3).map((s) => (s.state === 'reconnecting' ? s.nextInMs : 0))).toEqual([10, 20]);
    const late = await link.call('ptyrelay/hosts', {}).catch((e) => e);
    expect(isPtyRelayError(late, 'CONNECT_FAILED')).toBe(true);
    link.dispose();
    await new Promise<void>((r) => srv.close(() => r()));
  });
});
