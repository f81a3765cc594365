import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../relay/core/stub-bundle.js';
import { capability } from '../support/capabilities.js';

/** What `npm install` compiles (node-gyp); the local daemon and most suites load it. */
const PTY_NODE = join(packageRoot(), 'node_modules', 'node-pty', 'build', 'Release', 'pty.node');
const built = capability(
  'node-pty',
  existsSync(PTY_NODE)
    ? undefined
    : `${PTY_NODE} is missing: npm install did not build node-pty (it needs python3, make and a C++ compiler)`,
);
const require = createRequire(import.meta.url);

/**
 * Capability `node-pty`: its native build is there and works. Without it every suite that starts a
 * daemon or a PTY fails with node-pty's own load error; this file names the cause.
 */
describe.skipIf(!built)("node-pty's native build", () => {
  it('loads from build/Release and exports the API the lib calls', () => {
    const native = require(PTY_NODE) as Record<string, unknown>;
    for (const fn of ['fork', 'open', 'resize', 'process']) expect(typeof native[fn], fn).toBe('function');
    const { loadNativeModule } = require('node-pty/lib/utils') as {
      loadNativeModule(name: string): { dir: string };
    };
    expect(loadNativeModule('pty').dir).toMatch(/build\/Release\/$/);
  });

  it('spawns /bin/true in a PTY, which exits 0', async () => {
    const pty = require('node-pty') as typeof import('node-pty');
    const p = pty.spawn('/bin/true', [], { cols: 80, rows: 24 });
    const exit = await new Promise<{ exitCode: number }>((resolve) => p.onExit(resolve));
    expect(exit.exitCode).toBe(0);
  });
});
