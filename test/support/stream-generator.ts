import { createHash } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A deterministic pseudo-random text stream: the same (seed, bytes) always gives the same lines.
 * The program version runs on the host; the test computes the expected bytes locally.
 */
const GENERATOR_SOURCE = `
const [seed, total, rate] = process.argv.slice(2).map(Number);
const started = Date.now();
let x = seed >>> 0 || 1;
const rnd = () => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x; };
const ALPHA = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;-_=+*#@!?';
let written = 0, n = 0;
function line() {
  const len = 20 + (rnd() % 100);
  let s = String(n++).padStart(8, '0') + ' ';
  for (let i = 0; i < len; i++) s += ALPHA[rnd() % ALPHA.length];
  return s + '\\n';
}
function pump() {
  let block = '';
  while (written < total && block.length < 16384) { const l = line(); block += l; written += l.length; }
  // Ending by returning (not process.exit) lets stdout flush writes still queued for a full PTY.
  if (block.length === 0) return;
  // Optional pacing (bytes per second) so a stream lasts through a fault schedule.
  const ahead = rate > 0 ? written / rate * 1000 - (Date.now() - started) : 0;
  const next = () => (ahead > 0 ? setTimeout(pump, ahead) : setImmediate(pump));
  if (process.stdout.write(block)) next(); else process.stdout.once('drain', next);
}
pump();
`;

export function writeGenerator(dir: string): string {
  const path = join(dir, 'stream-generator.cjs');
  writeFileSync(path, GENERATOR_SOURCE);
  chmodSync(path, 0o644);
  return path;
}

/** What a PTY delivers for the generator's output: the tty turns each `\n` into `\r\n`. */
export function expectedStream(
  seed: number,
  total: number,
): { sha256: string; bytes: number; lastLine: string } {
  let x = seed >>> 0 || 1;
  const rnd = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
  const ALPHA = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;-_=+*#@!?';
  const h = createHash('sha256');
  let written = 0;
  let bytes = 0;
  let n = 0;
  let last = '';
  while (written < total) {
    const len = 20 + (rnd() % 100);
    let s = `${String(n++).padStart(8, '0')} `;
    for (let i = 0; i < len; i++) s += ALPHA[rnd() % ALPHA.length];
    written += s.length + 1;
    const out = `${s}\r\n`;
    h.update(out);
    bytes += out.length;
    last = s;
  }
  return { sha256: h.digest('hex'), bytes, lastLine: last };
}
