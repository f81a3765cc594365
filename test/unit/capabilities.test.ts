import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  CAPABILITIES,
  type Capability,
  capability,
  MissingCapabilityError,
  requiredCapabilities,
} from '../support/capabilities.js';

const ROOT = join(import.meta.dirname, '..', '..');
const VITEST = join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
const NAMES = Object.keys(CAPABILITIES) as Capability[];

/** `fn` with console.warn captured: what a skip printed. */
function warned(fn: () => unknown): { result: unknown; lines: string[] } {
  const spy = vi.spyOn(console, 'warn').mockImplementation(() => {});
  try {
    return { result: fn(), lines: spy.mock.calls.map((c) => c.join(' ')) };
  } finally {
    spy.mockRestore();
  }
}

describe('capability()', () => {
  it('is true when the capability is there, required or not, and prints nothing', () => {
    const { result, lines } = warned(() => capability('sshd', undefined, { PTYRELAY_REQUIRE: 'all' }));
    expect(result).toBe(true);
    expect(lines).toEqual([]);
  });

  it('throws MissingCapabilityError naming a missing capability PTYRELAY_REQUIRE names', () => {
    const env = { PTYRELAY_REQUIRE: 'docker, sshd' };
    let err: unknown;
    try {
      capability('sshd', '/usr/sbin/sshd is not installed', env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MissingCapabilityError);
    expect(err).toMatchObject({ capability: 'sshd', why: '/usr/sbin/sshd is not installed' });
    expect((err as Error).message).toBe(
      "required capability 'sshd' is missing (PTYRELAY_REQUIRE): /usr/sbin/sshd is not installed",
    );
  });

  it('`all` requires every capability', () => {
    expect([...requiredCapabilities({ PTYRELAY_REQUIRE: 'all' })].sort()).toEqual([...NAMES].sort());
    for (const name of NAMES) {
      expect(() => capability(name, 'gone', { PTYRELAY_REQUIRE: 'all' }), name).toThrow(
        `required capability '${name}' is missing`,
      );
    }
  });

  it('not required: returns false and prints why (once per capability and reason)', () => {
    for (const env of [{}, { PTYRELAY_REQUIRE: '' }, { PTYRELAY_REQUIRE: 'docker chromium' }]) {
      const { result } = warned(() => capability('zsh', `zsh is not on PATH (${JSON.stringify(env)})`, env));
      expect(result).toBe(false);
    }
    const { lines } = warned(() => {
      capability('strace', 'strace is not installed (unit test)', {});
      capability('strace', 'strace is not installed (unit test)', {});
    });
    expect(lines).toEqual(['skipped: strace is missing (strace is not installed (unit test))']);
  });

  it('reads the names comma- or space-separated', () => {
    expect([...requiredCapabilities({ PTYRELAY_REQUIRE: ' sshd,docker  root ' })].sort()).toEqual([
      'docker',
      'root',
      'sshd',
    ]);
    expect(requiredCapabilities({}).size).toBe(0);
  });

  it('docs/testing.md lists every capability', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'testing.md'), 'utf8');
    const listed = [...doc.matchAll(/^\| `([a-z0-9-]+)` +\|/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual([...NAMES].sort());
  });
});

describe('a test file whose capability is missing', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptr-capability-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'needs-sshd.test.ts');
  writeFileSync(
    file,
    [
      "import { describe, expect, it } from 'vitest';",
      `import { capability } from ${JSON.stringify(join(ROOT, 'test', 'support', 'capabilities.ts'))};`,
      "describe.skipIf(!capability('sshd', 'pretend missing'))('a suite that needs sshd', () => {",
      "  it('runs', () => expect(1).toBe(1));",
      '});',
      '',
    ].join('\n'),
  );

  /** Runs vitest on the file alone (its own root: no config, setup or leak check of this repo). */
  function vitest(require: string | undefined): { code: number | null; out: string } {
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' };
    delete env.PTYRELAY_REQUIRE; // CI sets it for this run; the child gets exactly what the case says
    if (require !== undefined) env.PTYRELAY_REQUIRE = require;
    const r = spawnSync(process.execPath, [VITEST, 'run', '--root', dir, '--reporter', 'default'], {
      cwd: dir,
      env,
      encoding: 'utf8',
      timeout: 100_000,
    });
    return { code: r.status, out: `${r.stdout}\n${r.stderr}` };
  }

  it('fails, naming the capability, when PTYRELAY_REQUIRE names it', () => {
    const r = vitest('sshd');
    expect(r.out).toContain("required capability 'sshd' is missing (PTYRELAY_REQUIRE): pretend missing");
    expect(r.code, r.out).not.toBe(0);
  });

  it('is skipped and says why when nothing requires it', () => {
    const r = vitest(undefined);
    expect(r.out).toContain('skipped: sshd is missing (pretend missing)');
    expect(r.out).toMatch(/1 skipped/);
    expect(r.code, r.out).toBe(0);
  });
});
