import { randomFillSync } from 'node:crypto';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  PADDING_POOL_BYTES,
  PADDING_POOL_MAX_TAKE,
  pooledRandomFill,
  pooledRandomFills,
  ssh2PaddingPooled,
} from '../../relay/ssh/ssh2-module.js';

const require = createRequire(import.meta.url);

interface Ssh2Cipher {
  allocPacket(payloadLen: number): Buffer;
  free(): void;
}

/** One of ssh2's own ciphers, as its key exchange makes them (binding, or Node's crypto with `forceNative`). */
function ssh2Cipher(name: string, forceNative: boolean): Ssh2Cipher {
  // Through ssh2-module first (imported above), so this is the copy ssh2 itself uses.
  const { createCipher, CIPHER_INFO } = require('ssh2/lib/protocol/crypto.js');
  const info = CIPHER_INFO[name];
  return createCipher({
    outbound: {
      onWrite: () => {},
      cipherInfo: info,
      cipherKey: Buffer.alloc(info.keyLen, 1),
      cipherIV: Buffer.alloc(info.ivLen, 2),
      seqno: 0,
      forceNative,
      macInfo: { len: 32, actualLen: 32, isETM: true, sslName: 'sha256' },
      macKey: Buffer.alloc(32, 3),
    },
  });
}

describe('ssh2 packet padding from a pooled generator', () => {
  it.each([
    ['aes128-gcm@openssh.com', false],
    ['aes128-gcm@openssh.com', true],
    ['chacha20-poly1305@openssh.com', false],
    ['chacha20-poly1305@openssh.com', true],
    ['aes128-ctr', false],
    ['aes128-ctr', true],
  ])('%s (native crypto: %s) pads every packet from the pool', (name, forceNative) => {
    const c = ssh2Cipher(name, forceNative);
    try {
      const before = pooledRandomFills();
      for (let len = 0; len < 40; len++) {
        const p = c.allocPacket(len);
        const padLen = p[4]!;
        expect(padLen).toBeGreaterThanOrEqual(4);
        expect(p.readUInt32BE(0)).toBe(1 + len + padLen);
      }
      expect(pooledRandomFills() - before).toBe(40);
    } finally {
      c.free();
    }
  });

  it('loaded ssh2 with the pooled function and left Node’s own to everyone else', () => {
    expect(ssh2PaddingPooled).toBe(true);
    expect(randomFillSync).not.toBe(pooledRandomFill);
  });

  it('fills exactly the requested range and returns the buffer', () => {
    const buf = Buffer.alloc(64, 0xaa);
    const before = pooledRandomFills();
    expect(pooledRandomFill(buf, 5, 19)).toBe(buf);
    expect(pooledRandomFills()).toBe(before + 1);
    expect(buf.subarray(0, 5).every((b) => b === 0xaa)).toBe(true);
    expect(buf.subarray(24).every((b) => b === 0xaa)).toBe(true);
    // 19 random bytes all equal to the old fill: a chance of 2^-152.
    expect(buf.subarray(5, 24).every((b) => b === 0xaa)).toBe(false);
  });

  it('never hands out the same bytes twice, across refills of the pool', () => {
    const seen = new Set<string>();
    const n = Math.ceil((3 * PADDING_POOL_BYTES) / 16);
    for (let i = 0; i < n; i++) seen.add(pooledRandomFill(Buffer.alloc(16)).toString('hex'));
    expect(seen.size).toBe(n);
  });

  it('takes what the pool cannot serve, and bad arguments, to Node’s function', () => {
    const before = pooledRandomFills();
    const big = pooledRandomFill(Buffer.alloc(PADDING_POOL_MAX_TAKE + 1));
    expect(big.some((b) => b !== 0)).toBe(true);
    expect(pooledRandomFill(new Uint32Array(4)).length).toBe(4);
    expect(pooledRandomFills()).toBe(before);
    expect(() => pooledRandomFill(Buffer.alloc(8), 4, 8)).toThrow(RangeError);
    expect(() => pooledRandomFill(Buffer.alloc(8), -1, 2)).toThrow(RangeError);
  });
});
