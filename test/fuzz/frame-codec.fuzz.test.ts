import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPtyRelayError } from '../../provider/errors.js';
import {
  encodeDataFrame,
  encodeInputFrame,
  encodeJsonBlobFrame,
  encodeJsonFrame,
  type Frame,
  FrameType,
} from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { joinDataPieces, normalizeFrames } from '../support/frame-pieces.js';
import { fuzzParams, TEST_TIMEOUT_MS } from './fuzz-options.js';

/** A small frame limit, so random lengths often land inside it and reach the payload parsers. */
const SMALL_MAX = 4096;

/** An encodable frame and what decoding it must give back. */
const frameArb: fc.Arbitrary<{ bytes: Buffer; expected: unknown }> = fc.oneof(
  fc.jsonValue().map((v) => ({
    bytes: encodeJsonFrame(v),
    expected: { type: FrameType.Json, message: JSON.parse(JSON.stringify(v)) },
  })),
  fc.tuple(fc.jsonValue(), fc.uint8Array({ maxLength: 64 })).map(([v, blob]) => ({
    bytes: encodeJsonBlobFrame(v, blob),
    expected: { type: FrameType.JsonBlob, message: JSON.parse(JSON.stringify(v)), blob: hex(blob) },
  })),
  fc
    .tuple(
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.maxSafeNat(),
      fc.uint8Array({ maxLength: 64 }),
    )
    .map(([id, inc, seq, data]) => ({
      bytes: encodeDataFrame(id, inc, seq, data),
      expected: {
        type: FrameType.Data,
        id: wellFormed(id),
        incarnationId: wellFormed(inc),
        seq,
        data: hex(data),
      },
    })),
  fc
    .tuple(fc.string({ unit: 'binary', maxLength: 30 }), fc.double(), fc.uint8Array({ maxLength: 64 }))
    .map(([id, inputSeq, data]) => ({
      bytes: encodeInputFrame(id, inputSeq, data),
      expected: { type: FrameType.Input, id: wellFormed(id), inputSeq, data: hex(data) },
    })),
);

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

/** What a string becomes through UTF-8 (lone surrogates turn into U+FFFD). */
function wellFormed(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}

/** Cuts `buf` at the given points (taken modulo its length, sorted, deduplicated). */
function chunk(buf: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => (buf.length ? c % (buf.length + 1) : 0)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of [...points, buf.length]) {
    out.push(buf.subarray(prev, p));
    prev = p;
  }
  return out;
}

type Outcome = { frames: unknown[]; error?: string };

/** Feeds the chunks; an error must be a PtyRelayError PROTOCOL_ERROR, and the decoder stays failed. */
function decode(chunks: Uint8Array[], max?: number): Outcome {
  const d = new FrameDecoder(max);
  const frames: Frame[] = [];
  for (const c of chunks) {
    try {
      frames.push(...d.push(c));
    } catch (err) {
      if (!isPtyRelayError(err, 'PROTOCOL_ERROR')) throw err;
      expect(() => d.push(Uint8Array.of(0, 0, 0, 1, 1))).toThrow(/decoder already failed/);
      return { frames: normalizeFrames(frames), error: err.code };
    }
    expect(d.pendingBytes).toBeLessThanOrEqual(chunks.reduce((n, x) => n + x.length, 0));
  }
  return { frames: normalizeFrames(frames) };
}

/** Bytes that look like frames often enough to reach every payload parser: valid, mutated, raw. */
const streamArb: fc.Arbitrary<Buffer> = fc
  .array(
    fc.oneof(
      frameArb.map((f) => f.bytes),
      // A header with an in-range length, any type byte, and a random payload of that length.
      fc.tuple(fc.integer({ min: 0, max: 6 }), fc.uint8Array({ maxLength: 40 })).map(([type, payload]) => {
        const h = Buffer.alloc(5);
        h.writeUInt32BE(payload.length + 1, 0);
        h.writeUInt8(type, 4);
        return Buffer.concat([h, payload]);
      }),
      // A valid frame with a few bytes overwritten (lengths inside the payload go wrong).
      fc
        .tuple(frameArb, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }))
        .map(([f, edits]) => {
          const b = Buffer.from(f.bytes);
          for (const [at, v] of edits) b[at % b.length] = v;
          return b;
        }),
      fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b)),
    ),
    { maxLength: 8 },
  )
  .map((parts) => Buffer.concat(parts));

describe('fuzz: FrameDecoder', () => {
  it(
    'round-trips any sequence of encoded frames under any chunking',
    () => {
      fc.assert(
        fc.property(
          fc.array(frameArb, { maxLength: 10 }),
          fc.array(fc.nat(), { maxLength: 12 }),
          (frames, cuts) => {
            const all = Buffer.concat(frames.map((f) => f.bytes));
            const out = decode(chunk(all, cuts));
            expect(out.error).toBeUndefined();
            expect(out.frames).toEqual(joinDataPieces(frames.map((f) => f.expected)));
          },
        ),
        fuzzParams('frame round-trip', { seed: 18_401, runs: 150, longRuns: 50_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'on arbitrary bytes gives the same frames (a Data frame in pieces) or PROTOCOL_ERROR whatever the chunking',
    () => {
      fc.assert(
        fc.property(
          streamArb,
          fc.array(fc.nat(), { maxLength: 12 }),
          fc.constantFrom(undefined, SMALL_MAX),
          (bytes, cuts, max) => {
            const whole = decode([bytes], max);
            const split = decode(chunk(bytes, cuts), max);
            if (whole.error === undefined) {
              expect(split).toEqual(whole);
            } else {
              // Frames before the bad one may surface from earlier pushes; the error always does.
              expect(split.error).toBe(whole.error);
            }
          },
        ),
        fuzzParams('frame garbage', { seed: 18_402, runs: 400, longRuns: 100_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'on random bytes fed one byte at a time never throws anything but PROTOCOL_ERROR',
    () => {
      fc.assert(
        fc.property(
          fc.uint8Array({ maxLength: 200 }),
          fc.constantFrom(undefined, 8, SMALL_MAX),
          (bytes, max) => {
            decode(
              Array.from(bytes, (b) => Uint8Array.of(b)),
              max,
            );
          },
        ),
        fuzzParams('frame bytewise', { seed: 18_403, runs: 300, longRuns: 50_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'encodes any id and incarnation or refuses them with PROTOCOL_ERROR',
    () => {
      fc.assert(
        fc.property(
          fc.oneof(
            fc.string({ unit: 'binary', maxLength: 20 }),
            fc.nat({ max: 70_000 }).map((n) => 'é'.repeat(n)),
          ),
          fc.oneof(
            fc.string({ unit: 'binary', maxLength: 20 }),
            fc.nat({ max: 300 }).map((n) => 'x'.repeat(n)),
          ),
          (id, inc) => {
            for (const encode of [
              () => encodeDataFrame(id, inc, 1, Uint8Array.of(1)),
              () => encodeInputFrame(id, 1, Uint8Array.of(1)),
            ]) {
              let bytes: Buffer;
              try {
                bytes = encode();
              } catch (err) {
                if (!isPtyRelayError(err, 'PROTOCOL_ERROR')) throw err;
                continue;
              }
              const [f] = new FrameDecoder().push(bytes) as Array<Frame & { id: string }>;
              expect(f.id).toBe(wellFormed(id));
            }
          },
        ),
        fuzzParams('frame encode ids', { seed: 18_404, runs: 200, longRuns: 20_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );
});
