import { describe, expect, it } from 'vitest';
import type { IPtyProvider, PtyDataEvent, PtySpawnResult } from '../../provider/contract.js';
import { type Attachment, type FanoutSink, RelayFanout } from '../../relay/flow/relay-fanout.js';
import { TerminalCredit } from '../../relay/flow/terminal-credit.js';

/** A sink whose queued bytes the test sets; counts what the fan-out encodes for it. */
function sink(buffered = 0) {
  const sent: number[] = [];
  const notes: string[] = [];
  const s = {
    sendBinary: (parts: Uint8Array[]) => sent.push(parts.reduce((n, p) => n + p.length, 0)),
    notify: (m: string) => notes.push(m),
    bufferedAmount: buffered,
  } satisfies FanoutSink & { bufferedAmount: number };
  return { s, sent, notes };
}

const ID = 'h/pty-1';
const result = (value: number, over: Partial<PtySpawnResult> = {}): PtySpawnResult => ({
  id: ID,
  pid: 1,
  incarnationId: 'inc',
  cols: 80,
  rows: 24,
  providerSequence: { value, generation: 'continued' },
  ...over,
});
const chunk = (seq: number, len = 100): PtyDataEvent => ({
  id: ID,
  incarnationId: 'inc',
  seq,
  data: Buffer.alloc(len),
});

function setup() {
  const acked: number[] = [];
  const provider = {
    acknowledgeDataEvent: (_id: string, n: number) => acked.push(n),
  } as unknown as IPtyProvider;
  const credit = new TerminalCredit();
  const resumes: Attachment[] = [];
  const f = new RelayFanout({ credit, clientBufferBytes: 1024, resume: (a) => resumes.push(a) });
  const data = (e: PtyDataEvent) => {
    credit.data(provider, e);
    f.data(e);
  };
  const total = () => acked.reduce((a, b) => a + b, 0);
  return { f, credit, provider, data, total, resumes };
}

/** One attachment that got [0, 100) and then lagged (its socket over the bound). */
function lagging() {
  const t = setup();
  const c = sink(0);
  const a = t.f.bind(c.s, ID, false);
  t.f.complete(a, result(0), t.provider);
  t.data(chunk(0));
  c.s.bufferedAmount = 4096;
  return { ...t, c, a };
}

describe('RelayFanout: lagging consumers cost nothing and resume from history', () => {
  it('stops encoding for a connection past its bound, keeps serving the others, and credits only them', () => {
    const { f, credit, provider, data, total } = setup();
    const slow = sink(4096);
    const fast = sink(0);
    f.complete(f.bind(slow.s, ID, false), result(0), provider);
    f.complete(f.bind(fast.s, ID, false), result(0), provider);
    data(chunk(0));
    expect(slow.sent).toEqual([]);
    expect(fast.sent).toHaveLength(1);
    data(chunk(100));
    expect(fast.sent).toHaveLength(2);
    expect(slow.sent).toEqual([]);
    expect(credit.consumers(ID)).toMatchObject({ keeping: 1, lagging: 1 });
    // The fast reader sets the pace: everything it took is acknowledged.
    expect(total()).toBe(200);
  });

  it('acknowledges nothing more when every consumer lags, so the stub pauses the PTY', () => {
    const { f, provider, data, total } = setup();
    const a = sink(0);
    f.complete(f.bind(a.s, ID, false), result(0), provider);
    data(chunk(0));
    expect(total()).toBe(100);
    a.s.bufferedAmount = 4096;
    data(chunk(100));
    data(chunk(200));
    expect(total()).toBe(100);
  });

  it('runs free without consumers', () => {
    const { data, total } = setup();
    data(chunk(0));
    data(chunk(100));
    expect(total()).toBe(200);
  });

  it('resumes a drained connection from the seq it reached: a replay continues the stream exactly', async () => {
    const { f, provider, data, resumes, c, a } = lagging();
    data(chunk(100));
    expect(a.sentSeq).toBe(100);
    c.s.bufferedAmount = 0;
    await new Promise((r) => setTimeout(r, 60));
    expect(resumes).toEqual([a]);
    // Output arriving while the catch-up attach is in flight is held, then deduplicated by seq.
    data(chunk(200));
    f.resumed(a, result(300, { replay: Buffer.alloc(200) }), provider, 'ptyrelay/reattach');
    // One frame for [0,100), then the replay [100,300) as one frame; the held chunk was inside it.
    const header = c.sent[0]! - 100;
    expect(c.sent).toEqual([header + 100, header + 200]);
    expect(a.sentSeq).toBe(300);
    data(chunk(300));
    expect(a.sentSeq).toBe(400);
    expect(c.notes).toEqual([]);
  });

  it('sends a snapshot reset as a reattach notification when the history no longer holds the seq', async () => {
    const { f, provider, data, resumes } = setup();
    const c = sink(0);
    const a = f.bind(c.s, ID, false);
    f.complete(a, result(0), provider);
    c.s.bufferedAmount = 4096;
    data(chunk(0));
    c.s.bufferedAmount = 0;
    await new Promise((r) => setTimeout(r, 60));
    expect(resumes).toEqual([a]);
    const snapshot = { data: 'screen', cols: 80, rows: 24, seq: 5000, alternateScreen: false };
    f.resumed(
      a,
      result(5100, {
        providerSequence: { value: 5100, generation: 'reset' },
        snapshot,
        replay: Buffer.alloc(100),
      }),
      provider,
      'ptyrelay/reattach',
    );
    expect(c.notes).toEqual(['ptyrelay/reattach']);
    expect(a.sentSeq).toBe(5100);
  });
});

describe('RelayFanout: a view never gets a hole', () => {
  it('drops output that overtook a catch-up reply; the provider redelivers it after the reply, in order', async () => {
    const { f, provider, data, resumes, c, a } = lagging();
    data(chunk(100));
    data(chunk(200));
    c.s.bufferedAmount = 0;
    await new Promise((r) => setTimeout(r, 60));
    expect(resumes).toEqual([a]);
    // Still on its way while the resume's attach was in flight: output past the lagged view.
    data(chunk(300));
    data(chunk(400));
    // The host catches the attach up from its history: the stream continues at 100, no replay.
    f.resumed(a, result(100), provider, 'ptyrelay/reattach');
    expect(a.sentSeq).toBe(100);
    expect(c.sent).toHaveLength(1);
    // The catch-up redelivers [100, 500) in order: contiguous, each chunk once.
    for (const seq of [100, 200, 300, 400]) data(chunk(seq));
    expect(a.sentSeq).toBe(500);
    expect(c.sent).toHaveLength(5);
    expect(f.holes).toBe(0);
  });

  it('a live chunk past the view is not sent: the view resumes from the seq it reached', async () => {
    const { f, provider, data, resumes } = setup();
    const c = sink(0);
    const a = f.bind(c.s, ID, false);
    f.complete(a, result(0), provider);
    data(chunk(0));
    data(chunk(300));
    expect(c.sent).toHaveLength(1);
    expect(a.sentSeq).toBe(100);
    expect(f.holes).toBe(1);
    await new Promise((r) => setTimeout(r, 60));
    expect(resumes).toEqual([a]);
    f.resumed(a, result(400, { replay: Buffer.alloc(300) }), provider, 'ptyrelay/reattach');
    expect(a.sentSeq).toBe(400);
    expect(c.sent).toHaveLength(2);
  });
});

describe('TerminalCredit: acknowledges by position where the provider takes it', () => {
  function positional() {
    const to: Array<[string, number]> = [];
    const counts: number[] = [];
    const provider = {
      acknowledgeDataEvent: (_id: string, n: number) => counts.push(n),
      acknowledgeDataTo: (_id: string, inc: string, seq: number) => to.push([inc, seq]),
    } as unknown as IPtyProvider;
    return { provider, to, counts };
  }

  it('sends the furthest position of the consumers that keep up, never a count', () => {
    const { provider, to, counts } = positional();
    const credit = new TerminalCredit();
    const fast = {};
    const slow = {};
    credit.open(provider, ID, 'inc', 0);
    credit.report(ID, fast, 0);
    credit.report(ID, slow, 0);
    credit.data(provider, chunk(0, 1000));
    credit.report(ID, fast, 600);
    credit.report(ID, slow, 200);
    // A re-attach below what was acknowledged (a catch-up for the slow one) changes nothing.
    credit.open(provider, ID, 'inc', 200);
    credit.report(ID, fast, 900);
    expect(to).toEqual([
      ['inc', 600],
      ['inc', 900],
    ]);
    expect(counts).toEqual([]);
  });

  it('tells the provider where a reset restarts the stream', () => {
    const { provider, to } = positional();
    const credit = new TerminalCredit();
    const view = {};
    credit.open(provider, ID, 'inc', 0);
    credit.report(ID, view, 0);
    credit.data(provider, chunk(0, 100));
    credit.report(ID, view, 50);
    credit.jump(provider, ID, 'inc', 5000, true);
    credit.data(provider, chunk(5000, 100));
    credit.report(ID, view, 5100);
    expect(to).toEqual([
      ['inc', 50],
      ['inc', 5000],
      ['inc', 5100],
    ]);
  });
});
