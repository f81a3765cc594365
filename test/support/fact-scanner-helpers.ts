/** Shared helpers of the fact-scanner unit tests. */
import { expect } from 'vitest';
import {
  FactScanner,
  type FactScannerOptions,
  type ScannedFact,
  type ScannerFact,
} from '../../agent-stub/session/fact-scanner.js';

export const ESC = '\x1b';
export const BEL = '\x07';
export const ST = `${ESC}\\`;
export const NONCE = 'n0nce-42';
export const osc = (body: string, term = BEL) => `${ESC}]${body}${term}`;

export const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
export const latin1 = (b: Uint8Array): string =>
  Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
export const utf8 = (b: Uint8Array): string => new TextDecoder().decode(b);

/** A clock that advances by a fixed step per call, so results do not depend on chunking. */
export function steppingClock(step = 10): () => number {
  let t = 1000;
  return () => {
    t += step;
    return t;
  };
}

export interface Scanned {
  data: Uint8Array;
  facts: ScannedFact[];
}

/** Feeds chunks then flush(); returns the concatenated output and facts at absolute offsets. */
export function feed(scanner: FactScanner, chunks: Uint8Array[]): Scanned {
  const parts: Uint8Array[] = [];
  const facts: ScannedFact[] = [];
  let base = 0;
  const take = (r: Scanned): void => {
    for (const f of r.facts) {
      expect(f.offset).toBeGreaterThanOrEqual(0);
      expect(f.offset).toBeLessThanOrEqual(r.data.length);
      facts.push({ offset: base + f.offset, fact: f.fact });
    }
    parts.push(r.data);
    base += r.data.length;
  };
  for (const c of chunks) take(scanner.push(c));
  take(scanner.flush());
  expect(scanner.hasPending()).toBe(false);
  return { data: Buffer.concat(parts), facts };
}

export const scan = (input: string | Uint8Array, opts: FactScannerOptions = { nonce: NONCE }): Scanned =>
  feed(new FactScanner(opts), [typeof input === 'string' ? bytes(input) : input]);
export const factsOf = (input: string, opts?: FactScannerOptions): ScannerFact[] =>
  scan(input, opts).facts.map((f) => f.fact);
export const outOf = (input: string, opts?: FactScannerOptions): string => utf8(scan(input, opts).data);

export function splitAt(input: Uint8Array, cuts: number[]): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  let prev = 0;
  for (const c of [...cuts, input.length]) {
    chunks.push(input.slice(prev, c));
    prev = c;
  }
  return chunks;
}

export function expectSame(actual: Scanned, expected: Scanned): void {
  expect(latin1(actual.data)).toBe(latin1(expected.data));
  expect(actual.facts).toEqual(expected.facts);
}
