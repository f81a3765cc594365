import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stubBundlePath } from '../../relay/core/stub-bundle.js';

/**
 * What the stub bundle holds and what ships beside it (scripts/lib/stub-bundle.mjs): the screen
 * model's worker thread runs a bundle of its own (the terminal emulator and the model code, none of
 * the daemon's, so the worker's isolate does not compile and hold the whole stub), and the
 * libraries only some commands use (the LSP client's, the main thread's terminal emulator for
 * restoring a screen) are parts too: V8 holds a script's whole source for as long as the script
 * lives, so whatever stub.cjs carries every daemon and bridge keeps.
 */
describe('the stub bundle and its parts', () => {
  const dir = dirname(stubBundlePath());
  const stub = readFileSync(stubBundlePath(), 'utf8');
  const worker = readFileSync(join(dir, 'model-worker.cjs'), 'utf8');

  it("the worker's bundle holds the model and the terminal, not the daemon", () => {
    expect(worker.includes('// agent-stub/session/model-worker.ts')).toBe(true);
    expect(worker.includes('node_modules/@xterm/headless/')).toBe(true);
    for (const other of ['// agent-stub/daemon/', '// agent-stub/lsp/', 'node_modules/zod/'])
      expect(worker.includes(other), other).toBe(false);
  });

  it('stub.cjs carries none of its parts: it requires them from beside itself', () => {
    for (const part of [
      'agent-stub/session/model-worker.ts',
      'node_modules/@xterm/',
      'node_modules/vscode-jsonrpc/',
      'node_modules/vscode-languageserver-protocol/',
      'node_modules/vscode-languageserver-types/',
    ])
      expect(stub.includes(part), part).toBe(false);
    expect(stub).toContain('require("./stub-lsp-libs.cjs")');
    expect(stub).toContain('require("./stub-xterm.cjs")');
    expect(stub).toContain('"model-worker.cjs"');
    const lsp = readFileSync(join(dir, 'stub-lsp-libs.cjs'), 'utf8');
    expect(lsp.includes('node_modules/vscode-jsonrpc/')).toBe(true);
    expect(readFileSync(join(dir, 'stub-xterm.cjs'), 'utf8').includes('node_modules/@xterm/headless/')).toBe(
      true,
    );
  });
});
