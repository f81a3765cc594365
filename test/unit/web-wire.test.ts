import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PtyRelayError } from '../../provider/errors.js';
import { encodeDataFrame, FrameType } from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { decodeDataFrames, encodeInputFrame } from '../../web/wire.js';

/** A copy in an ArrayBuffer of its own (a Buffer may be a view of a shared pool). */
const toArrayBuffer = (b: Uint8Array): ArrayBuffer => new Uint8Array(b).buffer;

describe('web page frame codec against the relay codec', () => {
  it('decodes every Data frame the relay encodes, several per message', () => {
    const frame = fc.record({
      id: fc.string({ minLength: 1, maxLength: 40 }),
      inc: fc.string({ maxLength: 60 }),
      seq: fc.nat({ max: 2 ** 40 }),
      data: fc.uint8Array({ maxLength: 300 }),
    });
    fc.assert(
      fc.property(fc.array(frame, { minLength: 1, maxLength: 5 }), (frames) => {
        const msg = Buffer.concat(frames.map((f) => encodeDataFrame(f.id, f.inc, f.seq, f.data)));
        const got = decodeDataFrames(toArrayBuffer(msg));
        expect(got.map((g) => ({ id: g.id, inc: g.incarnationId, seq: g.seq, data: [...g.data] }))).toEqual(
          frames.map((f) => ({ id: f.id, inc: f.inc, seq: f.seq, data: [...f.data] })),
        );
      }),
    );
  });

  it('encodes Input frames the relay decodes', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.nat({ max: 2 ** 40 }),
        fc.string(),
        (id, seq, text) => {
          const [f] = new FrameDecoder().push(encodeInputFrame(id, seq, text));
          expect(f).toMatchObject({ type: FrameType.Input, id, inputSeq: seq });
          expect(Buffer.from((f as { data: Uint8Array }).data).toString('utf8')).toBe(
            Buffer.from(text, 'utf8').toString('utf8'),
          );
        },
      ),
    );
  });

  it('rejects truncated and oversized frames with PROTOCOL_ERROR', () => {
    const whole = encodeDataFrame('local/pty-1', 'inc', 5, Buffer.from('hello'));
    for (const cut of [3, 8, 12, whole.length - 1]) {
      expect(() => decodeDataFrames(toArrayBuffer(whole.subarray(0, cut)))).toThrow(PtyRelayError);
    }
    const bad = Buffer.from(whole);
    bad.writeUInt32BE(2 ** 31, 0);
    expect(() => decodeDataFrames(toArrayBuffer(bad))).toThrow(/out of range/);
  });
});
