import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** The flood's input: a file of numbered printable lines, and what a tty makes of it. */
const LINE_BODY = 90;
const LINES_PER_CHUNK = 20_000;
const PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i)).join('');
const PRINTABLE2 = PRINTABLE + PRINTABLE;

export interface FloodFile {
  path: string;
  fileBytes: number;
  lines: number;
  /** What a tty delivers: every `\n` becomes `\r\n` (onlcr). */
  expectedBytes: number;
  expectedSha256: string;
}

/** Writes `targetBytes` (rounded down to whole lines) of 101-byte printable lines; hashes the tty form. */
export function generateFloodFile(dir: string, targetBytes: number): FloodFile {
  const path = join(dir, `flood-${targetBytes}.txt`);
  const lineBytes = 9 + 1 + LINE_BODY + 1;
  const lines = Math.floor(targetBytes / lineBytes);
  const fd = openSync(path, 'w', 0o644);
  const hash = createHash('sha256');
  try {
    for (let first = 0; first < lines; first += LINES_PER_CHUNK) {
      const parts: string[] = [];
      for (let i = first; i < Math.min(lines, first + LINES_PER_CHUNK); i++) {
        const off = (i * 7) % 95;
        parts.push(`${String(i).padStart(9, '0')} ${PRINTABLE2.slice(off, off + LINE_BODY)}`);
      }
      writeSync(fd, `${parts.join('\n')}\n`, null, 'latin1');
      hash.update(`${parts.join('\r\n')}\r\n`, 'latin1');
    }
  } finally {
    closeSync(fd);
  }
  return {
    path,
    fileBytes: lines * lineBytes,
    lines,
    expectedBytes: lines * (lineBytes + 1),
    expectedSha256: hash.digest('hex'),
  };
}

/** sha256 of the first `n` bytes of the file's tty form (to tell a lost tail from corruption). */
export function expectedPrefixSha256(file: FloodFile, n: number): string {
  const hash = createHash('sha256');
  const fd = openSync(file.path, 'r');
  const buf = Buffer.allocUnsafe(1 << 20);
  let left = n;
  try {
    while (left > 0) {
      const got = readSync(fd, buf, 0, buf.length, null);
      if (got === 0) break;
      const tty = Buffer.from(buf.subarray(0, got).toString('latin1').replace(/\n/g, '\r\n'), 'latin1');
      const take = tty.subarray(0, Math.min(left, tty.length));
      hash.update(take);
      left -= take.length;
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}
