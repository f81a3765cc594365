import { inflateSync } from 'node:zlib';

/** A decoded image: `width × height` pixels, 4 bytes (RGBA) each, row after row. */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8Array;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Channels per pixel by PNG colour type (only the 8-bit, non-palette, non-interlaced kinds). */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 4: 2, 6: 4 };

/**
 * Decodes the PNGs Chromium's screenshots are (8 bits per channel, grey or RGB with or without
 * alpha, not interlaced) into RGBA; anything else throws. Enough for tests that look at pixels.
 */
export function decodePng(png: Buffer): RgbaImage {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG');
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  for (let at = 8; at < png.length; ) {
    const len = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const body = png.subarray(at + 8, at + 8 + len);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [depth, colour, , , interlace] = body.subarray(8, 13);
      channels = CHANNELS[colour!] ?? 0;
      if (depth !== 8 || channels === 0 || interlace !== 0) {
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colour}, interlace ${interlace}`);
      }
    } else if (type === 'IDAT') idat.push(body);
    else if (type === 'IEND') break;
    at += 12 + len;
  }
  const raw = unfilter(inflateSync(Buffer.concat(idat)), width, height, channels);
  return { width, height, data: toRgba(raw, width * height, channels) };
}

/** Undoes the per-row filters (PNG spec §9): returns the bare samples, `height` rows of `width·bpp`. */
function unfilter(src: Buffer, width: number, height: number, bpp: number): Uint8Array {
  const stride = width * bpp;
  const out = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = src[y * (stride + 1)]!;
    const line = src.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[row + x - bpp]! : 0;
      const b = y > 0 ? out[row - stride + x]! : 0;
      const c = x >= bpp && y > 0 ? out[row - stride + x - bpp]! : 0;
      out[row + x] = (line[x]! + predict(filter, a, b, c)) & 0xff;
    }
  }
  return out;
}

function predict(filter: number, a: number, b: number, c: number): number {
  switch (filter) {
    case 0:
      return 0;
    case 1:
      return a;
    case 2:
      return b;
    case 3:
      return (a + b) >> 1;
    case 4: {
      const p = a + b - c;
      const pa = Math.abs(p - a);
      const pb = Math.abs(p - b);
      const pc = Math.abs(p - c);
      return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
    }
    default:
      throw new Error(`bad PNG filter ${filter}`);
  }
}

function toRgba(raw: Uint8Array, pixels: number, channels: number): Uint8Array {
  if (channels === 4) return raw;
  const out = new Uint8Array(pixels * 4);
  for (let i = 0; i < pixels; i++) {
    const s = raw.subarray(i * channels, (i + 1) * channels);
    const grey = channels <= 2;
    out[i * 4] = s[0]!;
    out[i * 4 + 1] = grey ? s[0]! : s[1]!;
    out[i * 4 + 2] = grey ? s[0]! : s[2]!;
    out[i * 4 + 3] = channels === 2 ? s[1]! : channels === 4 ? s[3]! : 255;
  }
  return out;
}
