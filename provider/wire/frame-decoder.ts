import { type Frame, FrameType, HEADER_BYTES, MAX_FRAME_BYTES, protocolError } from './frame-codec.js';

/*
 * Decoding of the stub link's frames (the layout and the encoders: frame-codec.ts). Pure: no I/O.
 */

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
