import { describe, expect, it } from 'vitest';
import { inputBytes } from '../../provider/input/input-bytes.js';

describe('inputBytes (the bytes of a write)', () => {
  it('encodes a string as UTF-8, the same bytes as Buffer.from, for a keystroke and for a paste', () => {
    const samples = [
      'a',
      '\r',
      '\x1b[A',
      'é→🙂',
      '\ud800 lone surrogate',
      'x'.repeat(4096),
      `${'ü'.repeat(3000)}🙂`,
    ];
    for (const s of samples) {
      const b = inputBytes(s);
      expect(Buffer.from(b).equals(Buffer.from(s, 'utf8'))).toBe(true);
    }
  });

  it('hands bytes through as they are', () => {
    const raw = new Uint8Array([0xff, 0x00, 0x1b]);
    expect(inputBytes(raw)).toBe(raw);
  });
});
