import { PtyRelayError } from '../errors.js';

/**
 * Framing of the stub link (relay <-> agent stub). Pure: no I/O.
 *
 *   u32 BE length (of everything after these 4 bytes) | u8 type | payload
 *
 * JSON frames carry control messages; DATA and INPUT frames carry raw bytes with a small
 * binary header so the data path never goes through JSON or base64. This file has the layout
 * and the encoders; frame-decoder.ts reads frames back.
 */
export const FrameType = {
  /** UTF-8 JSON control message. */
  Json: 1,
  /** Stub -> relay output: u16 idLen | id | u8 incLen | incarnation | f64 seq | bytes. */
  Data: 2,
  /** Relay -> stub input: u16 idLen | id | f64 inputSeq | bytes. */
  Input: 3,
  /** JSON with a binary attachment: u32 jsonLen | json | blob (replays, snapshots). */
  JsonBlob: 4,
  /** Relay -> stub credit: u16 idLen | id | f64 seq. Only to a daemon whose hello said `binaryAcks`. */
  Ack: 5,
  /** Stub -> relay input acknowledgement: f64 upTo. Only to a client whose hello said `binaryAcks`. */
  InputAck: 6,
  /**
   * Relay -> stub input with its origin: u16 idLen | id | f64 inputSeq | u8 originLen | origin |
   * f64 originSeq | bytes. `origin` names a client instance and `originSeq` is that client's own
   * input seq, so the daemon applies a frame once even when two relays forward it. Only to a
   * daemon whose hello said `inputOrigin`.
   */
  InputFrom: 7,
  /**
   * Client -> relay input that may have reached another relay process before (a resend after a
   * switch): the same layout as Input. The relay forwards it only where the daemon de-duplicates
   * by origin.
   */
  InputResent: 8,
} as const;

/** Largest frame accepted; a peer sending more is broken or hostile. Rings are capped below this. */
export const MAX_FRAME_BYTES = 32 * 1024 * 1024;
/** Bytes before a frame's payload: the u32 length and the u8 type. */
export const HEADER_BYTES = 5;

export type Frame =
  | { type: typeof FrameType.Json; message: unknown }
  | { type: typeof FrameType.JsonBlob; message: unknown; blob: Uint8Array }
  | { type: typeof FrameType.Data; id: string; incarnationId: string; seq: number; data: Uint8Array }
  | {
      type: typeof FrameType.Input | typeof FrameType.InputResent;
      id: string;
      inputSeq: number;
      data: Uint8Array;
    }
  | {
      type: typeof FrameType.InputFrom;
      id: string;
      inputSeq: number;
      origin: string;
      originSeq: number;
      data: Uint8Array;
    }
  | { type: typeof FrameType.Ack; id: string; seq: number }
  | { type: typeof FrameType.InputAck; upTo: number };

export function protocolError(message: string): PtyRelayError {
  return new PtyRelayError('PROTOCOL_ERROR', message);
}

/** Longest id (u16 length prefix) and incarnation id (u8 length prefix), in UTF-8 bytes. */
const MAX_ID_BYTES = 0xffff;
const MAX_INCARNATION_BYTES = 0xff;

/** An id field of `n` UTF-8 bytes is refused (not a RangeError from the buffer write) when too long to encode. */
function checkFieldLength(n: number, max: number, what: string): number {
  if (n > max) throw protocolError(`${what} of ${n} bytes exceeds ${max}`);
  return n;
}

/** UTF-8 bytes of an id field (see {@link checkFieldLength}). */
function fieldBytes(value: string, max: number, what: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  checkFieldLength(bytes.length, max, what);
  return bytes;
}

/**
 * An id field's UTF-8 length, checked, without the copy: a keystroke's frames (input, credit)
 * write their id straight into the frame, one allocation each.
 */
function fieldLength(value: string, max: number, what: string): number {
  return checkFieldLength(Buffer.byteLength(value, 'utf8'), max, what);
}

/**
 * A buffer of `size` bytes starting with the header of a frame of `payloadLength` bytes of
 * payload (the length is checked before anything is allocated).
 */
function withHeader(size: number, type: number, payloadLength: number): Buffer {
  if (payloadLength + 1 > MAX_FRAME_BYTES)
    throw protocolError(`frame of ${payloadLength} bytes exceeds the maximum`);
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32BE(payloadLength + 1, 0);
  out[4] = type;
  return out;
}

/** A whole frame's buffer (header written, payload not) for `payloadLength` bytes of payload. */
function frameWithHeader(type: number, payloadLength: number): Buffer {
  return withHeader(HEADER_BYTES + payloadLength, type, payloadLength);
}

/** The header alone, for frames joined from parts. */
function frameHeader(type: number, payloadLength: number): Buffer {
  return withHeader(HEADER_BYTES, type, payloadLength);
}

export function encodeJsonFrame(message: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  return Buffer.concat([frameHeader(FrameType.Json, body.length), body]);
}

export function encodeJsonBlobFrame(message: unknown, blob: Uint8Array): Buffer {
  const json = Buffer.from(JSON.stringify(message), 'utf8');
  const len = Buffer.allocUnsafe(4);
  len.writeUInt32BE(json.length, 0);
  return Buffer.concat([frameHeader(FrameType.JsonBlob, 4 + json.length + blob.length), len, json, blob]);
}

/** Header + payload as separate buffers so a large output chunk is never copied (socket.cork + 2 writes). */
export function encodeDataFrameParts(
  id: string,
  incarnationId: string,
  seq: number,
  data: Uint8Array,
): [Buffer, Uint8Array] {
  return [encodeDataFrameHead(id, incarnationId, seq, data.length), data];
}

/** Header and metadata of a Data frame whose payload (`payloadBytes`) the caller writes right after. */
export function encodeDataFrameHead(
  id: string,
  incarnationId: string,
  seq: number,
  payloadBytes: number,
): Buffer {
  return encodeDataFrameHeadFrom(dataFrameIds(id, incarnationId), seq, payloadBytes);
}

/**
 * The id and incarnation fields of a session's Data frames (u16 idLen | id | u8 incLen | inc),
 * encoded once per incarnation instead of once per frame (see {@link encodeDataFrameHeadFrom}).
 */
export function dataFrameIds(id: string, incarnationId: string): Buffer {
  const idBytes = fieldBytes(id, MAX_ID_BYTES, 'terminal id');
  const incBytes = fieldBytes(incarnationId, MAX_INCARNATION_BYTES, 'incarnation id');
  const out = Buffer.allocUnsafe(2 + idBytes.length + 1 + incBytes.length);
  let o = out.writeUInt16BE(idBytes.length, 0);
  o += idBytes.copy(out, o);
  o = out.writeUInt8(incBytes.length, o);
  incBytes.copy(out, o);
  return out;
}

/** {@link encodeDataFrameHead} with the ids already encoded by {@link dataFrameIds}. */
export function encodeDataFrameHeadFrom(ids: Uint8Array, seq: number, payloadBytes: number): Buffer {
  const metaLen = ids.length + 8;
  const meta = withHeader(HEADER_BYTES + metaLen, FrameType.Data, metaLen + payloadBytes);
  meta.set(ids, HEADER_BYTES);
  meta.writeDoubleBE(seq, HEADER_BYTES + ids.length);
  return meta;
}

export function encodeDataFrame(id: string, incarnationId: string, seq: number, data: Uint8Array): Buffer {
  const [meta, payload] = encodeDataFrameParts(id, incarnationId, seq, data);
  return Buffer.concat([meta, payload]);
}

/** An Input frame, or an InputResent one when `resent` (see FrameType). */
export function encodeInputFrame(id: string, inputSeq: number, data: Uint8Array, resent = false): Buffer {
  const idLen = fieldLength(id, MAX_ID_BYTES, 'terminal id');
  const type = resent ? FrameType.InputResent : FrameType.Input;
  const out = frameWithHeader(type, 2 + idLen + 8 + data.length);
  let o = out.writeUInt16BE(idLen, HEADER_BYTES);
  o += out.write(id, o, 'utf8');
  o = out.writeDoubleBE(inputSeq, o);
  out.set(data, o);
  return out;
}

/** Where a frame of input came from: a client instance and that client's input seq. */
export interface InputOriginField {
  origin: string;
  originSeq: number;
}

/** An InputFrom frame (see FrameType.InputFrom). */
export function encodeInputFromFrame(
  id: string,
  inputSeq: number,
  from: InputOriginField,
  data: Uint8Array,
): Buffer {
  const idLen = fieldLength(id, MAX_ID_BYTES, 'terminal id');
  const originLen = fieldLength(from.origin, MAX_INCARNATION_BYTES, 'input origin');
  const out = frameWithHeader(FrameType.InputFrom, 2 + idLen + 8 + 1 + originLen + 8 + data.length);
  let o = out.writeUInt16BE(idLen, HEADER_BYTES);
  o += out.write(id, o, 'utf8');
  o = out.writeDoubleBE(inputSeq, o);
  o = out.writeUInt8(originLen, o);
  o += out.write(from.origin, o, 'utf8');
  o = out.writeDoubleBE(from.originSeq, o);
  out.set(data, o);
  return out;
}

/** Credit for `id` up to `seq` (see FrameType.Ack). */
export function encodeAckFrame(id: string, seq: number): Buffer {
  const idLen = fieldLength(id, MAX_ID_BYTES, 'terminal id');
  const out = frameWithHeader(FrameType.Ack, 2 + idLen + 8);
  let o = out.writeUInt16BE(idLen, HEADER_BYTES);
  o += out.write(id, o, 'utf8');
  out.writeDoubleBE(seq, o);
  return out;
}

/** Every input frame up to `upTo` was applied (see FrameType.InputAck; failures go as JSON). */
export function encodeInputAckFrame(upTo: number): Buffer {
  const out = Buffer.allocUnsafe(HEADER_BYTES + 8);
  out.writeUInt32BE(9, 0);
  out[4] = FrameType.InputAck;
  out.writeDoubleBE(upTo, HEADER_BYTES);
  return out;
}
