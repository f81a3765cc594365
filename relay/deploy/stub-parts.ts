import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as z from 'zod/mini';
import { PtyRelayError } from '../../provider/errors.js';

/**
 * The parts of a stub build: files beside `stub.cjs` that it loads on first use (the model worker,
 * the LSP libraries, the terminal emulator of its main thread). scripts/lib/stub-bundle.mjs names
 * each with its sha256 in stub.cjs's first line, `/* ptyrelay-stub-parts {"file":"sha256",…} *\/`,
 * so the build id (stub.cjs's digest) covers them.
 */
const PARTS_LINE = /^\/\* ptyrelay-stub-parts (\{[^\n]*\}) \*\/\n/;
/** The first line is read in a buffer of this size: ample for a handful of names and digests. */
const HEAD_BYTES = 4096;

const PartsSchema = z.record(
  z.string().check(z.regex(/^[a-z0-9-]+\.cjs$/)),
  z.string().check(z.regex(/^[0-9a-f]{64}$/)),
);

/** The parts `stub` names (file name → sha256); none for a bundle without the line. */
export function stubParts(stub: string): Record<string, string> {
  const fd = openSync(stub, 'r');
  let head: string;
  try {
    const buf = Buffer.alloc(HEAD_BYTES);
    head = buf.subarray(0, readSync(fd, buf, 0, HEAD_BYTES, 0)).toString('latin1');
  } finally {
    closeSync(fd);
  }
  const m = PARTS_LINE.exec(head);
  if (!m) return {};
  let json: unknown;
  try {
    json = JSON.parse(m[1]!);
  } catch {
    json = undefined;
  }
  const parsed = PartsSchema.safeParse(json);
  if (!parsed.success)
    throw new PtyRelayError(
      'CONFIG_INVALID',
      `the stub bundle ${stub} names its parts wrongly; run npm run build`,
    );
  return parsed.data;
}

/**
 * The part files beside `stub`, each with the sha256 it names. The caller checks each part's bytes
 * against it when it hashes them anyway ({@link partMismatch}).
 * @throws PtyRelayError CONFIG_INVALID when a part is missing: `npm run build` writes them together.
 */
export function stubPartFiles(stub: string): { path: string; source: string; sha256: string }[] {
  return Object.entries(stubParts(stub)).map(([file, sha256]) => {
    const source = join(dirname(stub), file);
    if (!existsSync(source))
      throw new PtyRelayError(
        'CONFIG_INVALID',
        `the stub part ${file} is missing beside ${stub}; run npm run build`,
      );
    return { path: file, source, sha256 };
  });
}

/** The error for a part whose bytes are not the ones `stub` names (a bundle and parts of different builds). */
export function partMismatch(source: string, stub: string): PtyRelayError {
  return new PtyRelayError(
    'CONFIG_INVALID',
    `the stub part ${source} is not the one ${stub} was built with; run npm run build`,
  );
}
