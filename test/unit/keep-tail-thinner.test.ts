import { describe, expect, it } from 'vitest';
import { KeepTailThinner, type ThinnedEvent } from '../../agent-stub/flow/keep-tail-thinner.js';

const b = (s: string) => Buffer.from(s);
const show = (events: ThinnedEvent[]) =>
  events.map((e) =>
    e.kind === 'data'
      ? `data@${e.seq}:${Buffer.from(e.data).toString()}`
      : e.kind === 'gap'
        ? `gap ${e.fromSeq}-${e.toSeq} (${e.droppedBytes})`
        : `${e.dropped ? 'dropped' : 'kept'} ${e.fact.type}@${e.seq}`,
  );

describe('KeepTailThinner', () => {
  it('passes everything through when output fits the keep budget', () => {
    const t = new KeepTailThinner(10, 100);
    t.pushData(10, b('hello '));
    t.pushFact(13, { type: 'bell' });
    t.pushData(16, b('world'));
    expect(show(t.flush())).toEqual(['data@10:hello world', 'kept bell@13']);
    expect(t.hasEvents).toBe(false);
  });

  it('keeps only the tail and reports the gap and the dropped facts in stream order', () => {
    const t = new KeepTailThinner(0, 4);
    t.pushData(0, b('aaaa'));
    t.pushFact(2, { type: 'title', title: 'T' });
    t.pushData(4, b('bbbb'));
    t.pushFact(5, { type: 'bell' });
    t.pushData(8, b('cc'));
    t.pushFact(9, { type: 'commandFinished', exitCode: 2 });
    expect(show(t.flush())).toEqual([
      'gap 0-6 (6)',
      'dropped title@2',
      'dropped bell@5',
      'data@6:bbcc',
      'kept commandFinished@9',
    ]);
  });

  it('continues seamlessly after a flush: the next gap starts where the last flush ended', () => {
    const t = new KeepTailThinner(100, 3);
    t.pushData(100, b('xyz'));
    expect(show(t.flush())).toEqual(['data@100:xyz']);
    t.pushData(103, b('12345678'));
    expect(show(t.flush())).toEqual(['gap 103-108 (5)', 'data@108:678']);
    t.pushFact(111, { type: 'bell' });
    expect(show(t.flush())).toEqual(['kept bell@111']);
  });

  it('bounds memory: a flood keeps keepBytes, and facts coalesce past the cap', () => {
    const t = new KeepTailThinner(0, 1024);
    let seq = 0;
    for (let i = 0; i < 10_000; i++) {
      t.pushData(seq, Buffer.alloc(100, 0x79));
      seq += 100;
      t.pushFact(seq, { type: 'title', title: `t${i}` });
    }
    expect(t.pending).toBe(1024);
    const events = t.flush();
    const titles = events.filter((e) => e.kind === 'fact');
    expect(titles.length).toBeLessThanOrEqual(4096);
    const last = titles.at(-1);
    expect(last?.kind === 'fact' && last.fact.type === 'title' && last.fact.title).toBe('t9999');
    expect(events[0]).toEqual({ kind: 'gap', fromSeq: 0, toSeq: seq - 1024, droppedBytes: seq - 1024 });
  });
});
