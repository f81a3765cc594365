import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleBuildId } from '../../provider/daemon-runtime/stub-paths.js';

const dir = mkdtempSync(join(tmpdir(), 'ptr-build-id-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sha12 = (b: Buffer) => createHash('sha256').update(b).digest('hex').slice(0, 12);

describe('bundleBuildId (read in pieces)', () => {
  it.each([
    ['empty', 0],
    ['one byte', 1],
    ['exactly one piece', 64 * 1024],
    ['a piece and a byte', 64 * 1024 + 1],
    ['a bundle-sized file', 1_400_000 + 17],
  ])('is the sha256 of the whole file (%s)', (_name, size) => {
    const bytes = randomBytes(size);
    const file = join(dir, `stub-${size}.cjs`);
    writeFileSync(file, bytes);
    expect(bundleBuildId(file, {})).toBe(sha12(bytes));
  });

  it('takes PTYRELAY_BUILD_ID over the file', () => {
    expect(bundleBuildId(join(dir, 'absent.cjs'), { PTYRELAY_BUILD_ID: 'fixed-id' })).toBe('fixed-id');
  });

  it('fails on a missing file as the read did', () => {
    expect(() => bundleBuildId(join(dir, 'absent.cjs'), {})).toThrow(/ENOENT/);
  });
});
