import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

describe("the checkout's ./ptyrelay (README quick start)", () => {
  it('runs the built command directly: no copy of the package, no rebuild', () => {
    const home = mkdtempSync(join(tmpdir(), 'ptr-launcher-'));
    try {
      const r = spawnSync(join(ROOT, 'ptyrelay'), ['--version'], {
        cwd: ROOT,
        env: { ...process.env, HOME: home, npm_config_cache: join(home, '.npm') },
        encoding: 'utf8',
      });
      const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(
        new RegExp(`^ptyrelay ${version.replace(/\./g, '\\.')} \\(stub build [0-9a-f]+, node v`),
      );
      // npx would have installed the checkout into npm's cache (and run its `prepare` build there).
      expect(readdirSync(home)).toEqual([]);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('the README uses it, not npx, for commands in the checkout', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('./ptyrelay open local');
    expect(readme).not.toMatch(/^npx ptyrelay/m);
  });
});
