import { PtyRelayError } from '../errors.js';

/**
 * Framing of the stub link (relay <-> agent stub). Pure: no I/O.
 *
 *   u32 BE length (of everything after these 4 bytes) | u8 type | payload
 *
 * JSON frames carry control messages; DATA and INPUT frames carry raw bytes with a small
 * binary header so the data path never goes through JSON or base64.
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
const HEADER_BYTES = 5;

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

function protocolError(message: string): PtyRelayError {
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

/** A seq or input seq read from a binary frame: a non-negative safe integer, else the frame is refused. */
function count(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw protocolError(`${what} ${value} is not a count`);
  return value;
}

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch {
    throw protocolError('malformed JSON in frame');
  }
}

function decodeInputFrom(p: Buffer): Frame {
  if (p.length < 2) throw protocolError('truncated input frame');
  const idLen = p.readUInt16BE(0);
  let o = 2 + idLen;
  if (o + 9 > p.length) throw protocolError('truncated input frame');
  const id = p.toString('utf8', 2, o);
  const inputSeq = p.readDoubleBE(o);
  const originLen = p.readUInt8(o + 8);
  o += 9;
  if (originLen === 0 || o + originLen + 8 > p.length) throw protocolError('malformed input origin');
  const origin = p.toString('utf8', o, o + originLen);
  const originSeq = count(p.readDoubleBE(o + originLen), 'input origin seq');
  const data = p.subarray(o + originLen + 8);
  return { type: FrameType.InputFrom, id, inputSeq, origin, originSeq, data };
}

function decodePayload(type: number, p: Buffer): Frame {
  switch (type) {
    case FrameType.Json:
      return { type, message: parseJson(p) };
    case FrameType.JsonBlob: {
      if (p.length < 4) throw protocolError('truncated JSON blob frame');
      const jsonLen = p.readUInt32BE(0);
      if (4 + jsonLen > p.length) throw protocolError('JSON length exceeds frame');
      return { type, message: parseJson(p.subarray(4, 4 + jsonLen)), blob: p.subarray(4 + jsonLen) };
    }
    // Data frames never get here: the decoder reads them as they arrive (FrameDecoder.openData).
    case FrameType.Input:
    case FrameType.InputResent: {
      if (p.length < 2) throw protocolError('truncated input frame');
      const idLen = p.readUInt16BE(0);
      const o = 2 + idLen;
      if (o + 8 > p.length) throw protocolError('truncated input frame');
      return { type, id: p.toString('utf8', 2, o), inputSeq: p.readDoubleBE(o), data: p.subarray(o + 8) };
    }
    case FrameType.InputFrom:
      return decodeInputFrom(p);
    case FrameType.Ack: {
      if (p.length < 2) throw protocolError('truncated ack frame');
      const idLen = p.readUInt16BE(0);
      if (idLen === 0 || 2 + idLen + 8 !== p.length) throw protocolError('malformed ack frame');
      return { type, id: p.toString('utf8', 2, 2 + idLen), seq: count(p.readDoubleBE(2 + idLen), 'ack seq') };
    }
    case FrameType.InputAck:
      if (p.length !== 8) throw protocolError('malformed input ack frame');
      return { type, upTo: count(p.readDoubleBE(0), 'input ack') };
    default:
      throw protocolError(`unknown frame type ${type}`);
  }
}

/** A Data frame whose header was read and whose payload is still going out, piece by piece. */
interface OpenData {
  id: string;
  incarnationId: string;
  /** Seq of the payload's next byte. */
  seq: number;
  /** Payload bytes still to come. */
  left: number;
}

/**
 * Incremental decoder: feed arbitrary chunks, get frames. Throws PROTOCOL_ERROR on an oversized,
 * truncated or unknown frame; after a throw the decoder is unusable (close the link).
 *
 * Every frame comes out whole, except a Data frame: once its header is in, its payload comes out
 * as it arrives, as Data frames of its own (each `seq` the offset of its first byte), each a view
 * of the chunk that carried it. An SSH channel cuts the daemon's frames (up to 32 KiB of output)
 * at its own packets, so nearly every frame of a flood spans two chunks, and assembling them
 * copied every byte of output into a buffer of its own.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private failed = false;
  private open: OpenData | undefined;

  constructor(private readonly maxFrameBytes = MAX_FRAME_BYTES) {}

  push(chunk: Uint8Array): Frame[] {
    if (this.failed) throw protocolError('decoder already failed');
    const buf = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (buf.length === 0) return [];
    this.chunks.push(buf);
    this.buffered += buf.length;
    const frames: Frame[] = [];
    try {
      while (this.next(frames));
    } catch (err) {
      this.failed = true;
      throw err;
    }
    return frames;
  }

  /** Bytes held waiting for the rest of a frame. */
  get pendingBytes(): number {
    return this.buffered;
  }

  /** Decodes what the buffered bytes allow next into `frames`; false when they allow nothing more. */
  private next(frames: Frame[]): boolean {
    if (this.open) return this.dataPiece(this.open, frames);
    if (this.buffered < 4) return false;
    const len = this.peek(4)!.readUInt32BE(0);
    if (len < 1 || len > this.maxFrameBytes) throw protocolError(`frame length ${len} out of range`);
    if (this.buffered >= HEADER_BYTES && this.peek(HEADER_BYTES)![4] === FrameType.Data)
      return this.openData(len, frames);
    if (this.buffered < 4 + len) return false;
    const whole = this.take(4 + len);
    frames.push(decodePayload(whole[4], whole.subarray(5)));
    return true;
  }

  /**
   * Reads the header of the Data frame of `len` bytes that starts the buffer (false until it is
   * all in) and opens its payload; a frame with an empty payload goes out at once.
   */
  private openData(len: number, frames: Frame[]): boolean {
    // Each field must lie inside the frame: a short frame is refused, never read into the next.
    const need = (n: number) => {
      if (n > 4 + len) throw protocolError('truncated data frame');
      return this.peek(n);
    };
    const idLenAt = need(HEADER_BYTES + 2);
    if (!idLenAt) return false;
    const idLen = idLenAt.readUInt16BE(HEADER_BYTES);
    const incLenAt = need(HEADER_BYTES + 2 + idLen + 1);
    if (!incLenAt) return false;
    const incLen = incLenAt[HEADER_BYTES + 2 + idLen]!;
    const headBytes = HEADER_BYTES + 2 + idLen + 1 + incLen + 8;
    const head = need(headBytes);
    if (!head) return false;
    this.skip(headBytes);
    const o = HEADER_BYTES + 2 + idLen + 1;
    const open: OpenData = {
      id: head.toString('utf8', HEADER_BYTES + 2, HEADER_BYTES + 2 + idLen),
      incarnationId: head.toString('utf8', o, o + incLen),
      seq: count(head.readDoubleBE(o + incLen), 'data seq'),
      left: 4 + len - headBytes,
    };
    if (open.left === 0) frames.push(dataFrame(open, head.subarray(headBytes, headBytes)));
    else this.open = open;
    return true;
  }

  /** The next piece of the open Data frame's payload, a view of the chunk it arrived in. */
  private dataPiece(open: OpenData, frames: Frame[]): boolean {
    const first = this.chunks[0];
    if (!first) return false;
    const n = Math.min(open.left, first.length);
    frames.push(dataFrame(open, n === first.length ? first : first.subarray(0, n)));
    this.skip(n);
    open.seq += n;
    open.left -= n;
    if (open.left === 0) this.open = undefined;
    return true;
  }

  /** The first `n` buffered bytes (a view when one chunk holds them; header-sized copies otherwise), or undefined. */
  private peek(n: number): Buffer | undefined {
    if (this.buffered < n) return undefined;
    const first = this.chunks[0]!;
    return first.length >= n ? first : Buffer.concat(this.chunks, n);
  }

  /** Drops the first `n` buffered bytes. */
  private skip(n: number): void {
    this.buffered -= n;
    while (n > 0) {
      const c = this.chunks[0]!;
      if (c.length > n) {
        this.chunks[0] = c.subarray(n);
        return;
      }
      this.chunks.shift();
      n -= c.length;
    }
  }

  private take(n: number): Buffer {
    const first = this.chunks[0];
    if (first.length >= n) {
      // Zero-copy when the frame lies inside one chunk (the common case for large reads).
      const out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return out;
    }
    // The frame spans chunks: copy just its bytes; what follows it stays a view of its chunk.
    const out = Buffer.allocUnsafe(n);
    let at = 0;
    while (at < n) {
      const c = this.chunks[0];
      const take = Math.min(c.length, n - at);
      out.set(take === c.length ? c : c.subarray(0, take), at);
      at += take;
      if (take === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(take);
    }
    this.buffered -= n;
    return out;
  }
}

function dataFrame(open: OpenData, data: Uint8Array): Frame {
  return { type: FrameType.Data, id: open.id, incarnationId: open.incarnationId, seq: open.seq, data };
}
