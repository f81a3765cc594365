import { describe, expect, it } from 'vitest';
import { keepTailBytes } from '../../agent-stub/daemon/background-delivery.js';
import { DEFAULT_PENDING_CAP, resolveLimits } from '../../agent-stub/daemon/daemon-limits.js';

describe('daemon limits', () => {
  it('fills defaults', () => {
    expect(resolveLimits({})).toEqual({
      ringBytes: 4 * 1024 * 1024,
      backgroundRingBytes: 512 * 1024,
      scrollbackRows: 10_000,
      scrollbackIdleMs: 30_000,
      creditWindow: 256 * 1024,
      creditWindowMax: 2 * 1024 * 1024,
      keepTailMin: 64 * 1024,
      pendingCap: DEFAULT_PENDING_CAP,
    });
  });

  it('refuses relations that would lose output, naming the flag', () => {
    expect(() => resolveLimits({ ringBytes: 1024 * 1024, creditWindow: 2 * 1024 * 1024 })).toThrow(
      /--credit-window/,
    );
    expect(() => resolveLimits({ ringBytes: 256 * 1024, keepTailMin: 512 * 1024 })).toThrow(/--keep-tail/);
    expect(() => resolveLimits({ ringBytes: 64 * 1024 * 1024 })).toThrow(/--ring-bytes/);
    expect(() => resolveLimits({ pendingCap: 1024 })).toThrow(/--pending-cap/);
    expect(() => resolveLimits({ scrollbackIdleMs: -1 })).toThrow(/--scrollback-idle-ms/);
    expect(resolveLimits({ scrollbackIdleMs: 0 }).scrollbackIdleMs).toBe(0);
    expect(() => resolveLimits({ creditWindow: 512 * 1024, creditWindowMax: 256 * 1024 })).toThrow(
      /--credit-window-max/,
    );
    // A pending cap below the default maximum window bounds it; a larger minimum raises it.
    expect(resolveLimits({ pendingCap: 1024 * 1024 }).creditWindowMax).toBe(1024 * 1024);
    expect(resolveLimits({ creditWindow: 3 * 1024 * 1024 }).creditWindowMax).toBe(3 * 1024 * 1024);
    expect(() => resolveLimits({ ringBytes: 256 * 1024, backgroundRingBytes: 512 * 1024 })).toThrow(
      /--background-ring-bytes/,
    );
    expect(() => resolveLimits({ backgroundRingBytes: 100 })).toThrow(/--background-ring-bytes/);
    // A ring smaller than the default background ring bounds it.
    expect(resolveLimits({ ringBytes: 256 * 1024 }).backgroundRingBytes).toBe(256 * 1024);
  });

  it('sizes the keep-tail by the number of background sessions', () => {
    expect(keepTailBytes(1)).toBe(512 * 1024);
    expect(keepTailBytes(8)).toBe(256 * 1024);
    expect(keepTailBytes(20)).toBe(Math.floor((2 * 1024 * 1024) / 20));
    expect(keepTailBytes(100)).toBe(64 * 1024);
    expect(keepTailBytes(100, 128 * 1024)).toBe(128 * 1024);
  });
});
