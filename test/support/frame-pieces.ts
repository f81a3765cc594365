import { type Frame, FrameType } from '../../provider/wire/frame-codec.js';

/** Frames as comparable values: payloads and blobs as hex, a Data frame's pieces joined again. */
export function normalizeFrames(frames: Frame[]): unknown[] {
  return joinDataPieces(
    frames.map((f) => {
      const o: Record<string, unknown> = { ...f };
      for (const k of ['data', 'blob']) if (o[k]) o[k] = Buffer.from(o[k] as Uint8Array).toString('hex');
      return o;
    }),
  );
}

type HexData = { type: number; id: string; incarnationId: string; seq: number; data: string };

/**
 * Normalized frames (payloads as hex) with the pieces of a Data frame joined: the decoder hands a
 * Data frame's payload out as it arrives, each piece at the seq of its first byte. Expected frames
 * go through it too, so two frames that happen to continue each other compare the same.
 */
export function joinDataPieces(frames: unknown[]): unknown[] {
  const out: unknown[] = [];
  for (const f of frames as HexData[]) {
    const prev = out.at(-1) as HexData | undefined;
    if (
      f.type === FrameType.Data &&
      prev?.type === FrameType.Data &&
      prev.id === f.id &&
      prev.incarnationId === f.incarnationId &&
      prev.data.length > 0 &&
      prev.seq + prev.data.length / 2 === f.seq
    )
      out[out.length - 1] = { ...prev, data: prev.data + f.data };
    else out.push(f);
  }
  return out;
}
