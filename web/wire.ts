import { PtyRelayError } from '../provider/errors.js';

/**
 * The two binary frames the page exchanges with the relay (provider/wire/frame-codec.ts has the
 * Node version; this one uses DataView so the page bundles no Buffer):
 *   u32 length | u8 type | payload
 *   Data  (2, relay → page): u16 idLen | id | u8 incLen | incarnationId | f64 seq | bytes
 *   Input (3, page → relay): u16 idLen | id | f64 inputSeq | bytes
 *   InputResent (8, page → relay): as Input, for a frame that may have reached another relay process
 */
export const FRAME_DATA = 2;
export const FRAME_INPUT = 3;
export const FRAME_INPUT_RESENT = 8;

export interface DataFrame {
  id: string;
  incarnationId: string;
  seq: number;
  data: Uint8Array;
}

const utf8 = new TextEncoder();
const text = new TextDecoder('utf-8', { fatal: true });

function bad(msg: string): PtyRelayError {
  return new PtyRelayError('PROTOCOL_ERROR', msg);
}

/** Every Data frame in one binary WebSocket message (other frame types are skipped). */
export function decodeDataFrames(message: ArrayBuffer): DataFrame[] {
  const view = new DataView(message);
  const bytes = new Uint8Array(message);
  const out: DataFrame[] = [];
  let o = 0;
  while (o < bytes.length) {
    if (o + 5 > bytes.length) throw bad('truncated frame header');
    const len = view.getUint32(o);
    const end = o + 4 + len;
    if (len < 1 || end > bytes.length) throw bad(`frame length ${len} out of range`);
    if (view.getUint8(o + 4) === FRAME_DATA) {
      let p = o + 5;
      if (p + 2 > end) throw bad('truncated data frame');
      const idLen = view.getUint16(p);
      p += 2;
      if (p + idLen + 1 > end) throw bad('truncated data frame');
      const id = text.decode(bytes.subarray(p, p + idLen));
      p += idLen;
      const incLen = view.getUint8(p);
      p += 1;
      if (p + incLen + 8 > end) throw bad('truncated data frame');
      const incarnationId = text.decode(bytes.subarray(p, p + incLen));
      p += incLen;
      const seq = view.getFloat64(p);
      out.push({ id, incarnationId, seq, data: bytes.subarray(p + 8, end) });
    }
    o = end;
  }
  return out;
}

/** One Input frame (InputResent when `resent`): `data` typed into terminal `id` as input number `inputSeq`. */
export function encodeInputFrame(
  id: string,
  inputSeq: number,
  data: string | Uint8Array,
  resent = false,
): Uint8Array {
  const idBytes = utf8.encode(id);
  const payload = typeof data === 'string' ? utf8.encode(data) : data;
  const len = 1 + 2 + idBytes.length + 8 + payload.length;
  const out = new Uint8Array(4 + len);
  const view = new DataView(out.buffer);
  view.setUint32(0, len);
  view.setUint8(4, resent ? FRAME_INPUT_RESENT : FRAME_INPUT);
  view.setUint16(5, idBytes.length);
  out.set(idBytes, 7);
  view.setFloat64(7 + idBytes.length, inputSeq);
  out.set(payload, 15 + idBytes.length);
  return out;
}
