import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CommandRecords,
  describeCommand,
  lineRange,
  type OutputPoint,
  pointsIn,
} from '../../agent-stub/history/command-records.js';
import { LineIndex } from '../../agent-stub/history/line-index.js';
import { MAX_COMMAND_RECORDS } from '../../provider/wire/command-messages.js';

const at = (seq: number, line: number, atLineStart = true): OutputPoint => ({
  seq,
  pos: { line, atLineStart },
});

describe('CommandRecords', () => {
  it('numbers commands c1, c2, … and keeps where their output lies', () => {
    const r = new CommandRecords();
    r.started(at(10, 1), 'echo a', '/tmp', 1000);
    r.finished(at(14, 2), { exitCode: 0, durationMs: 5 });
    r.started(at(30, 3), 'false', '/tmp', 2000);
    r.finished(at(30, 3), { exitCode: 1, durationMs: 1 });
    r.started(at(40, 4), 'sleep 9', undefined, 3000);
    expect(r.total).toBe(3);
    expect(r.running?.id).toBe('c3');
    const head = at(52, 5, false);
    expect(r.newest(10).map((c) => describeCommand(c, head))).toEqual([
      { id: 'c3', commandLine: 'sleep 9', startedAt: 3000, running: true, lineBegin: 4, lineEnd: 6 },
      // No output: an empty range.
      {
        id: 'c2',
        commandLine: 'false',
        cwd: '/tmp',
        startedAt: 2000,
        running: false,
        durationMs: 1,
        exitCode: 1,
        lineBegin: 3,
        lineEnd: 3,
      },
      {
        id: 'c1',
        commandLine: 'echo a',
        cwd: '/tmp',
        startedAt: 1000,
        running: false,
        durationMs: 5,
        exitCode: 0,
        lineBegin: 1,
        lineEnd: 2,
      },
    ]);
    expect(r.startedSince(30)).toEqual(['c2', 'c3']);
    expect(r.get('c2')?.commandLine).toBe('false');
    expect(r.get('c4')).toBeUndefined();
    // The shell exits while c3 runs: it ends without an exit code.
    r.ended(at(60, 7));
    expect(describeCommand(r.get('c3')!, at(99, 9))).toMatchObject({ running: false, lineEnd: 7 });
    expect(describeCommand(r.get('c3')!, at(99, 9)).exitCode).toBeUndefined();
    // An end marker without a running command changes nothing.
    r.finished(at(70, 8), { exitCode: 3 });
    expect(r.get('c3')?.exitCode).toBeUndefined();
  });

  it('a start while one runs ends that one there; without a log there are no line ranges', () => {
    const r = new CommandRecords();
    r.started({ seq: 0 }, 'a', undefined, 1);
    r.started({ seq: 5 }, 'b', undefined, 2);
    expect(describeCommand(r.get('c1')!, { seq: 9 })).toEqual({
      id: 'c1',
      commandLine: 'a',
      startedAt: 1,
      running: false,
    });
    expect(r.running?.id).toBe('c2');
  });

  it(`keeps the newest ${MAX_COMMAND_RECORDS}; ids keep counting`, () => {
    const r = new CommandRecords();
    for (let i = 0; i < MAX_COMMAND_RECORDS + 5; i++) {
      r.started({ seq: i * 2 }, `cmd ${i + 1}`, undefined, i);
      r.finished({ seq: i * 2 + 1 }, { exitCode: 0 });
    }
    expect(r.total).toBe(MAX_COMMAND_RECORDS + 5);
    expect(r.get('c5')).toBeUndefined();
    expect(r.get('c6')?.commandLine).toBe('cmd 6');
    expect(r.get(`c${MAX_COMMAND_RECORDS + 5}`)?.commandLine).toBe(`cmd ${MAX_COMMAND_RECORDS + 5}`);
    expect(r.newest(2).map((c) => c.id)).toEqual([
      `c${MAX_COMMAND_RECORDS + 5}`,
      `c${MAX_COMMAND_RECORDS + 4}`,
    ]);
  });

  it('lineRange: a last line without its line break counts', () => {
    expect(lineRange({ line: 3, atLineStart: true }, { line: 5, atLineStart: true }, false)).toEqual([3, 5]);
    expect(lineRange({ line: 3, atLineStart: true }, { line: 5, atLineStart: false }, false)).toEqual([3, 6]);
    expect(lineRange({ line: 3, atLineStart: false }, { line: 3, atLineStart: false }, true)).toEqual([3, 3]);
  });
});

describe('pointsIn', () => {
  it('gives every offset of a chunk the line the log index gives it (property)', () => {
    const chunk = fc.uint8Array({ maxLength: 200 }).map((a) => a.map((b) => (b % 4 === 0 ? 0x0a : 0x61)));
    fc.assert(
      fc.property(fc.array(chunk, { minLength: 1, maxLength: 10 }), fc.nat(), (chunks, pick) => {
        const index = new LineIndex(0);
        let seq = 0;
        for (const data of chunks) {
          const pos = { line: index.lfCount, atLineStart: index.atLineStart };
          const offset = data.length === 0 ? 0 : pick % (data.length + 1);
          const p = pointsIn(data, seq, pos)(offset);
          const probe = new LineIndex(0);
          for (const [i, d] of chunks.entries()) {
            const s = chunks.slice(0, i).reduce((n, c) => n + c.length, 0);
            const cut = s + d.length <= seq + offset ? d : d.subarray(0, Math.max(0, seq + offset - s));
            if (cut.length > 0) probe.scan(s, cut);
            if (s + d.length >= seq + offset) break;
          }
          expect(p).toEqual({
            seq: seq + offset,
            pos: { line: probe.lfCount, atLineStart: probe.atLineStart },
          });
          index.scan(seq, data);
          seq += data.length;
        }
      }),
      { seed: 54_001, numRuns: 200 },
    );
  });
});
