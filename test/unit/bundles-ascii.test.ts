import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot, stubBundlePath } from '../../relay/core/stub-bundle.js';
import { toAscii } from '../../scripts/lib/ascii-only.mjs';

/**
 * The bundles node runs are ASCII (scripts/lib/ascii-only.mjs): V8 keeps a script's source in the
 * heap, as two bytes per character once a single character is not Latin-1 (an arrow in a comment
 * esbuild kept did that to the stub's 1.4 MB).
 */
describe('bundles are ASCII', () => {
  const bin = join(packageRoot(), 'dist', 'bin');
  const files = [
    stubBundlePath(),
    ...['model-worker.cjs', 'stub-lsp-libs.cjs', 'stub-xterm.cjs'].map((f) =>
      join(dirname(stubBundlePath()), f),
    ),
    ...readdirSync(bin)
      .filter((f) => f.endsWith('.js'))
      .map((f) => join(bin, f)),
  ];

  it.each(files)('%s', (file) => {
    const text = readFileSync(file, 'utf8');
    const at = text.search(/[^\x00-\x7f]/);
    expect(at === -1 ? '' : text.slice(Math.max(0, at - 60), at + 20)).toBe('');
  });

  it('the rewrite keeps what a comment says and leaves ASCII alone', () => {
    expect(toAscii('a → b — c 😀')).toBe('a \\u2192 b \\u2014 c \\ud83d\\ude00');
    expect(toAscii('plain')).toBe('plain');
  });
});
