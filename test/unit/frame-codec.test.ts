import { describe, expect, it } from 'vitest';
import { PtyRelayError } from '../../provider/errors.js';
import {
  dataFrameIds,
  encodeAckFrame,
  encodeDataFrame,
  encodeDataFrameHead,
  encodeDataFrameHeadFrom,
  encodeInputAckFrame,
  encodeInputFrame,
  encodeInputFromFrame,
  encodeJsonBlobFrame,
  encodeJsonFrame,
  type Frame,
  FrameType,
} from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { normalizeFrames } from '../support/frame-pieces.js';

const sample = (): Buffer[] => [
  encodeJsonFrame({ t: 'req', rid: 1, method: 'list', params: {} }),
  encodeDataFrame('pty-1', 'c0ffee-inc', 123456789012, Buffer.from('hello \x1b[1mworld\x1b[0m')),
  encodeInputFrame('pty-22', 7, Buffer.from('ls -la\r')),
  encodeJsonBlobFrame({ t: 'res', rid: 2, result: { replayBytes: 3 } }, Buffer.from([0, 255, 10])),
  encodeDataFrame('pty-1', 'c0ffee-inc', 0, Buffer.alloc(0)),
  encodeJsonFrame({ t: 'hello', text: 'ünïcödé ✓' }),
];

describe('frame codec', () => {
  it('round-trips every frame type', () => {
    const frames = new FrameDecoder().push(Buffer.concat(sample()));
    expect(frames.map((f) => f.type)).toEqual([
      FrameType.Json,
      FrameType.Data,
      FrameType.Input,
      FrameType.JsonBlob,
      FrameType.Data,
      FrameType.Json,
    ]);
    const [json, data, input, blob, empty, uni] = frames;
    expect(json).toEqual({ type: FrameType.Json, message: { t: 'req', rid: 1, method: 'list', params: {} } });
    expect(data.type === FrameType.Data && data.seq).toBe(123456789012);
    expect(data.type === FrameType.Data && Buffer.from(data.data).toString()).toBe(
      'hello \x1b[1mworld\x1b[0m',
    );
    expect(data.type === FrameType.Data && data.incarnationId).toBe('c0ffee-inc');
    expect(
      input.type === FrameType.Input && [input.id, input.inputSeq, Buffer.from(input.data).toString()],
    ).toEqual(['pty-22', 7, 'ls -la\r']);
    expect(blob.type === FrameType.JsonBlob && [...blob.blob]).toEqual([0, 255, 10]);
    expect(empty.type === FrameType.Data && empty.data.length).toBe(0);
    expect(uni.type === FrameType.Json && uni.message).toEqual({ t: 'hello', text: 'ünïcödé ✓' });
  });

  it('round-trips input with its origin, and resent input', () => {
    const from = { origin: 'Zq3-instance_digest-01', originSeq: 2 ** 40 };
    const [withOrigin, resent] = new FrameDecoder().push(
      Buffer.concat([
        encodeInputFromFrame('pty-9', 17, from, Buffer.from('ü\r')),
        encodeInputFrame('local/pty-9', 4, Buffer.from('x'), true),
      ]),
    );
    expect(
      withOrigin.type === FrameType.InputFrom && {
        ...withOrigin,
        data: Buffer.from(withOrigin.data).toString(),
      },
    ).toEqual({
      type: FrameType.InputFrom,
      id: 'pty-9',
      inputSeq: 17,
      ...from,
      data: 'ü\r',
    });
    expect(resent.type === FrameType.InputResent && [resent.id, resent.inputSeq]).toEqual(['local/pty-9', 4]);
    const noOrigin = encodeInputFromFrame('pty-9', 1, { origin: 'o', originSeq: 1 }, Buffer.alloc(0));
    noOrigin[4 + 1 + 2 + 5 + 8] = 0; // origin length 0
    expect(() => new FrameDecoder().push(noOrigin)).toThrow(/input origin/);
    expect(() =>
      encodeInputFromFrame('pty-9', 1, { origin: 'o'.repeat(256), originSeq: 1 }, Buffer.alloc(0)),
    ).toThrow(/input origin of 256 bytes/);
  });

  it('gives the same frames for every split position and for byte-at-a-time input', () => {
    const all = Buffer.concat(sample());
    const expected = normalizeFrames(new FrameDecoder().push(all));
    for (let i = 0; i <= all.length; i++) {
      const d = new FrameDecoder();
      const got = [...d.push(all.subarray(0, i)), ...d.push(all.subarray(i))];
      expect(normalizeFrames(got)).toEqual(expected);
      expect(d.pendingBytes).toBe(0);
    }
    const d = new FrameDecoder();
    const got: Frame[] = [];
    for (const b of all) got.push(...d.push(Buffer.from([b])));
    expect(normalizeFrames(got)).toEqual(expected);
  });

  it('decodes merged chunks holding several frames and a partial one', () => {
    const [a, b, c] = sample();
    const d = new FrameDecoder();
    expect(d.push(Buffer.concat([a, b, c.subarray(0, 4)]))).toHaveLength(2);
    expect(d.push(c.subarray(4))).toHaveLength(1);
  });

  it('hands out a data frame that spans reads in pieces, each a view of its read: nothing is copied', () => {
    const first = encodeDataFrame('local/pty-1', 'inc', 0, Buffer.alloc(32 * 1024, 0x61));
    const second = encodeDataFrame('local/pty-1', 'inc', 32 * 1024, Buffer.alloc(1000, 0x62));
    const head = first.length - 32 * 1024;
    // Two reads as an SSH channel hands them over: the first frame ends inside the second read.
    const cut = 16 * 1024;
    const read1 = first.subarray(0, cut);
    const read2 = Buffer.concat([first.subarray(cut), second]);
    const d = new FrameDecoder();
    const frames = [...d.push(read1), ...d.push(read2)];
    expect(frames.map((f) => (f.type === FrameType.Data ? [f.seq, f.data.length] : f.type))).toEqual([
      [0, cut - head],
      [cut - head, 32 * 1024 - (cut - head)],
      [32 * 1024, 1000],
    ]);
    const buffers = frames.map((f) => f.type === FrameType.Data && f.data.buffer);
    expect(buffers).toEqual([read1.buffer, read2.buffer, read2.buffer]);
    expect(d.pendingBytes).toBe(0);
  });

  it('reads a data frame whose header is cut anywhere, and waits for its payload before handing any out', () => {
    const frame = encodeDataFrame('local/pty-7', 'incarnation', 4096, Buffer.from('abcdef'));
    const head = frame.length - 6;
    for (let i = 1; i < frame.length; i++) {
      const d = new FrameDecoder();
      const early = d.push(frame.subarray(0, i));
      // Nothing before the header is whole; after it, the payload's first bytes at once.
      expect(normalizeFrames(early)).toEqual(
        i <= head
          ? []
          : normalizeFrames([
              {
                type: FrameType.Data,
                id: 'local/pty-7',
                incarnationId: 'incarnation',
                seq: 4096,
                data: frame.subarray(head, i),
              },
            ]),
      );
      expect(normalizeFrames([...early, ...d.push(frame.subarray(i))])).toEqual(
        normalizeFrames(new FrameDecoder().push(frame)),
      );
    }
  });

  it('refuses a data frame whose seq is not a count (its pieces are numbered from it)', () => {
    for (const seq of [-1, 0.5, Number.NaN, 2 ** 53]) {
      const frame = encodeDataFrame('pty-1', 'inc', seq, Buffer.from('x'));
      expect(() => new FrameDecoder().push(frame)).toThrow(/data seq/);
    }
    expect(
      new FrameDecoder().push(encodeDataFrame('pty-1', 'inc', 2 ** 53 - 1, Buffer.alloc(0))),
    ).toHaveLength(1);
  });

  it('rejects malformed JSON with PROTOCOL_ERROR', () => {
    const body = Buffer.from('{not json');
    const head = Buffer.from([0, 0, 0, body.length + 1, FrameType.Json]);
    expect(() => new FrameDecoder().push(Buffer.concat([head, body]))).toThrowError(
      expect.objectContaining({ code: 'PROTOCOL_ERROR' }),
    );
  });

  it('rejects oversized, zero-length, unknown and truncated frames', () => {
    const cases = [
      Buffer.from([0x7f, 0xff, 0xff, 0xff, 1]),
      Buffer.from([0, 0, 0, 0]),
      Buffer.from([0, 0, 0, 2, 99, 0]),
      Buffer.from([0, 0, 0, 3, FrameType.Data, 0, 50]),
      Buffer.from([0, 0, 0, 5, FrameType.JsonBlob, 0, 0, 0, 9]),
    ];
    for (const c of cases) {
      const d = new FrameDecoder();
      let err: unknown;
      try {
        d.push(c);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(PtyRelayError);
      expect((err as PtyRelayError).code).toBe('PROTOCOL_ERROR');
      expect(() => d.push(Buffer.from([1]))).toThrow();
    }
  });

  it('round-trips the binary credit and input acknowledgements', () => {
    const frames = new FrameDecoder().push(
      Buffer.concat([
        encodeAckFrame('pty-7', 9_007_199_254_740_991),
        encodeInputAckFrame(42),
        encodeAckFrame('ü', 0),
      ]),
    );
    expect(frames).toEqual([
      { type: FrameType.Ack, id: 'pty-7', seq: 9_007_199_254_740_991 },
      { type: FrameType.InputAck, upTo: 42 },
      { type: FrameType.Ack, id: 'ü', seq: 0 },
    ]);
  });

  it('refuses an acknowledgement whose seq is not a count, or whose length is off', () => {
    const ack = (seq: number) => encodeAckFrame('pty-1', seq);
    const cases = [
      ack(-1),
      ack(1.5),
      ack(Number.NaN),
      ack(2 ** 60),
      encodeInputAckFrame(-3),
      encodeInputAckFrame(Number.POSITIVE_INFINITY),
      // An ack with an empty id, one with a byte too many, an input ack with a byte too few.
      Buffer.from([0, 0, 0, 11, FrameType.Ack, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
      Buffer.concat([Buffer.from([0, 0, 0, 17, FrameType.Ack]), ack(1).subarray(5), Buffer.from([0])]),
      Buffer.from([0, 0, 0, 8, FrameType.InputAck, 0, 0, 0, 0, 0, 0, 0]),
    ];
    for (const c of cases) {
      expect(() => new FrameDecoder().push(c)).toThrowError(
        expect.objectContaining({ code: 'PROTOCOL_ERROR' }),
      );
    }
  });

  it('a data frame head from pre-encoded ids is the same bytes as one encoded whole', () => {
    const ids = dataFrameIds('pty-3', 'inc-ä');
    expect(encodeDataFrameHeadFrom(ids, 77, 5)).toEqual(encodeDataFrameHead('pty-3', 'inc-ä', 77, 5));
    const [f] = new FrameDecoder().push(
      Buffer.concat([encodeDataFrameHeadFrom(ids, 77, 5), Buffer.from('hello')]),
    );
    expect(f).toMatchObject({ type: FrameType.Data, id: 'pty-3', incarnationId: 'inc-ä', seq: 77 });
  });

  it('enforces a custom maximum frame size before buffering the body', () => {
    const d = new FrameDecoder(1024);
    const big = encodeJsonFrame({ pad: 'x'.repeat(2000) });
    expect(() => d.push(big.subarray(0, 10))).toThrowError(
      expect.objectContaining({ code: 'PROTOCOL_ERROR' }),
    );
  });
});
