import crypto from 'node:crypto';
import { createRequire } from 'node:module';

/**
 * The one place the relay loads `ssh2` (import it from here, not from 'ssh2'), so that its packets
 * take their padding from a buffered random source.
 *
 * ssh2 pads every packet it sends (4 to 19 bytes) with a call of its own to
 * `crypto.randomFillSync`. Each call builds a crypto job in C++ and asks OpenSSL for a handful of
 * bytes; with keys 30 ms apart (the process idle in between) that took ~50 µs of the ~100 µs from
 * `channelData` to the socket write of a keystroke's packet, measured per keystroke in the relay
 * (docs/benchmarks.md). OpenSSH takes its padding from a buffered generator (`arc4random`).
 *
 * ssh2's modules bind `randomFillSync` when they load. While `ssh2` loads here, and only then,
 * `crypto.randomFillSync` is {@link pooledRandomFill}: ssh2 keeps that function, everything else in
 * the process keeps Node's own. When ssh2 was already loaded (a test that imported it first) it
 * keeps Node's function and works as before, only slower.
 */

/** Bytes taken from the generator at a time. */
export const PADDING_POOL_BYTES = 4096;
/** Requests larger than this go to Node's function directly (padding and nonces are ≤ 32 bytes). */
export const PADDING_POOL_MAX_TAKE = 256;

const nodeRandomFill = crypto.randomFillSync;
let pool = Buffer.alloc(0);
let taken = 0;
let served = 0;

/** Requests {@link pooledRandomFill} served from its pool so far (tests: ssh2 really uses it). */
export function pooledRandomFills(): number {
  return served;
}

/**
 * `crypto.randomFillSync(buf, offset, size)` for small requests: fills from a block of
 * {@link PADDING_POOL_BYTES} bytes of Node's CSPRNG, each byte handed out once and zeroed when
 * taken. Anything else (large or unusual arguments, which Node's function validates) goes to
 * Node's function.
 */
export function pooledRandomFill<T extends NodeJS.ArrayBufferView>(
  buf: T,
  offset?: number,
  size?: number,
): T {
  if (!(buf instanceof Uint8Array)) return nodeRandomFill(buf, offset, size);
  const start = offset ?? 0;
  const n = size ?? buf.length - start;
  const fits =
    Number.isInteger(start) && Number.isInteger(n) && start >= 0 && n >= 0 && start + n <= buf.length;
  if (!fits || n > PADDING_POOL_MAX_TAKE) return nodeRandomFill(buf, offset, size);
  if (taken + n > pool.length) {
    pool = nodeRandomFill(Buffer.allocUnsafeSlow(PADDING_POOL_BYTES));
    taken = 0;
  }
  buf.set(pool.subarray(taken, taken + n), start);
  pool.fill(0, taken, taken + n);
  taken += n;
  served++;
  return buf;
}

const require = createRequire(import.meta.url);

/**
 * Whether module `m` is loaded already. A path a later ssh2 moved or no longer exports counts as
 * not loaded (a missing ssh2 itself fails at the `require` below, as any missing dependency).
 */
function loaded(m: string): boolean {
  let path: string;
  try {
    path = require.resolve(m);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_PACKAGE_PATH_NOT_EXPORTED' || code === 'MODULE_NOT_FOUND') return false;
    throw err;
  }
  return require.cache[path] !== undefined;
}

/** True when ssh2 loads here, with the pooled padding (false: some of it was loaded before). */
export const ssh2PaddingPooled = !loaded('ssh2') && !loaded('ssh2/lib/protocol/crypto.js');

type Ssh2 = typeof import('ssh2');

function loadSsh2(): Ssh2 {
  if (!ssh2PaddingPooled) return require('ssh2') as Ssh2;
  crypto.randomFillSync = pooledRandomFill as typeof crypto.randomFillSync;
  try {
    return require('ssh2') as Ssh2;
  } finally {
    crypto.randomFillSync = nodeRandomFill;
  }
}

const ssh2: Ssh2 = loadSsh2();
export default ssh2;
