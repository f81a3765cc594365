import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Ssh2 from 'ssh2';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../relay/core/stub-bundle.js';
import {
  SSH2_PINNED,
  ssh2ModulesProblem,
  ssh2Parts,
  ssh2ShapeProblem,
} from '../../relay/ssh/ssh2-modules.js';

const require = createRequire(import.meta.url);
const root = packageRoot();

/** Node's own modules a fresh node has loaded after running `code` (an ES module). */
function builtinsAfter(code: string): string[] {
  const r = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `${code}\nconsole.log(JSON.stringify(process.moduleLoadList));`],
    { cwd: root, encoding: 'utf8' },
  );
  expect(r.status, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as string[]).filter((m) => m.startsWith('NativeModule '));
}

/**
 * Contract of relay/ssh/ssh2-modules.ts, the one place the relay reaches past ssh2's package
 * entry: on the pinned version its modules are the entry's own client and key parser, and loading
 * them leaves out what only the entry loads (its HTTP agents, and with them `https` and `tls`).
 * A version whose modules moved or changed fails here.
 */
describe('the ssh2 adapter', () => {
  it('is written against the version package.json pins exactly and node_modules holds', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.dependencies.ssh2).toBe(SSH2_PINNED);
    expect(require('ssh2/package.json').version).toBe(SSH2_PINNED);
  });

  it("gives the package entry's own client class and key parser", () => {
    const entry = require('ssh2') as typeof Ssh2;
    expect(ssh2ShapeProblem()).toBeUndefined();
    expect(ssh2Parts().Client).toBe(entry.Client);
    expect(ssh2Parts().parseKey).toBe(entry.utils.parseKey);
  });

  it('names what differs in modules shaped otherwise', () => {
    const keyParser = { parseKey: () => undefined };
    class Client {
      connect() {}
    }
    expect(ssh2ModulesProblem(Client, keyParser)).toBeUndefined();
    expect(ssh2ModulesProblem({ Client }, keyParser)).toMatch(/does not export a class/);
    expect(ssh2ModulesProblem(class {}, keyParser)).toMatch(/without connect/);
    expect(ssh2ModulesProblem(Client, {})).toMatch(/no parseKey/);
  });

  it('loads neither https nor tls, which the package entry does', () => {
    // The build's output of the adapter (tsc), as the library entry runs it.
    const adapter = pathToFileURL(join(root, 'dist', 'relay', 'ssh', 'ssh2-modules.js')).href;
    const viaAdapter = builtinsAfter(`const m = await import(${JSON.stringify(adapter)}); m.ssh2Parts();`);
    expect(viaAdapter).toContain('NativeModule crypto'); // ssh2 did load
    expect(viaAdapter.filter((m) => /^NativeModule (https|tls)$/.test(m))).toEqual([]);
    const viaEntry = builtinsAfter(`await import('ssh2');`);
    expect(viaEntry).toContain('NativeModule https');
  });
});
