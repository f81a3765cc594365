import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { utcIsoTime } from '../../provider/utc-time.js';

/** The extremes a Date can hold: ±8.64e15 ms around the epoch. */
const MAX_DATE_MS = 8.64e15;

describe('utcIsoTime', () => {
  it('is the text toISOString gives, for any time a Date can hold', () => {
    fc.assert(
      fc.property(fc.integer({ min: -MAX_DATE_MS, max: MAX_DATE_MS }), (ms) => {
        expect(utcIsoTime(ms)).toBe(new Date(ms).toISOString());
      }),
      { seed: 20261206, numRuns: 2000 },
    );
  });

  it('pads every field, and tells years 0 and 9999 from the expanded ones', () => {
    for (const ms of [
      0,
      -1,
      1,
      Date.UTC(2026, 0, 2, 3, 4, 5, 6),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
      -62167219200000,
    ]) {
      expect(utcIsoTime(ms)).toBe(new Date(ms).toISOString());
    }
    expect(utcIsoTime(Date.UTC(2026, 0, 2, 3, 4, 5, 6))).toBe('2026-01-02T03:04:05.006Z');
  });

  it('reads the clock when no time is given', () => {
    const before = Date.now();
    const t = Date.parse(utcIsoTime());
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(Date.now());
  });
});
