import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stubBundlePath } from '../../relay/core/stub-bundle.js';

/**
 * The screen model's worker thread runs a bundle of its own (scripts/lib/stub-bundle.mjs): the
 * terminal emulator and the model code, none of the daemon's, so the worker's isolate does not
 * compile and hold the whole stub. The stub carries that bundle as its source.
 */
describe('the stub bundle and its model worker', () => {
  const stub = readFileSync(stubBundlePath(), 'utf8');
  const worker = readFileSync(join(dirname(stubBundlePath()), 'model-worker.cjs'), 'utf8');

  it("the worker's bundle holds the model and the terminal, not the daemon", () => {
    expect(worker.includes('// agent-stub/session/model-worker.ts')).toBe(true);
    expect(worker.includes('node_modules/@xterm/headless/')).toBe(true);
    for (const other of ['// agent-stub/daemon/', '// agent-stub/lsp/', 'node_modules/zod/'])
      expect(worker.includes(other), other).toBe(false);
    expect(worker.length).toBeLessThan(stub.length / 2);
  });

  it('the stub carries that bundle as source, and its own code does not include the model', () => {
    expect(stub.includes('// agent-stub/session/model-worker-entry.ts')).toBe(true);
    expect(/^\/\/ agent-stub\/session\/model-worker\.ts$/m.test(stub)).toBe(false);
  });
});
