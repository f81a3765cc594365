import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capability } from '../support/capabilities.js';
import { missingNodeBuilds, nodeBuilds } from '../support/node-builds.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';

const ROOT = join(import.meta.dirname, '..', '..');
/** Packing is quick; the install compiles node-pty (and ssh2's optional cpu-features): bounded. */
const PACK_TIMEOUT_MS = 60_000;
const INSTALL_TIMEOUT_MS = 300_000;
const REGISTRY = 'https://registry.npmjs.org';
/** Debian's nodejs headers (libnode-dev): node-gyp builds against them instead of downloading. */
const SYSTEM_NODE_HEADERS = '/usr/include/node/common.gypi';
/** Relay lines the installed command is also run under (official builds, test/support/node-builds.ts). */
const OTHER_NODES = [22, 26] as const;
const PKG_VERSION: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { cwd: opts.cwd, env: opts.env ?? process.env, timeout: opts.timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

/**
 * The install's lockfile: the repository's, with the packed tarball as the one dependency and
 * each registry package's tarball URL (the repository's lock omits them), so that npm resolves
 * nothing and finds every tarball in its cache by integrity — offline.
 */
function installLock(tarball: string): { manifest: object; lock: object } {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
  const spec = `file:${tarball}`;
  const manifest = { name: 'ptyrelay-install-check', private: true, dependencies: { ptyrelay: spec } };
  for (const [key, entry] of Object.entries<Record<string, unknown>>(lock.packages)) {
    if (!key.startsWith('node_modules/') || entry.resolved || entry.link) continue;
    const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    entry.resolved = `${REGISTRY}/${name}/-/${name.split('/').pop()}-${entry.version}.tgz`;
  }
  lock.name = manifest.name;
  lock.packages[''] = manifest;
  lock.packages['node_modules/ptyrelay'] = {
    version: pkg.version,
    resolved: spec,
    integrity: `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`,
    license: pkg.license,
    dependencies: pkg.dependencies,
    bin: pkg.bin,
    engines: pkg.engines,
  };
  return { manifest, lock };
}

/**
 * README "Install the command": the packed package installs into a fresh prefix with npm from
 * its cache alone (`npm install --offline`), and the installed `ptyrelay` works from any
 * directory, against a running relay.
 */
describe('the packed package installs and runs as a command', {
  timeout: INSTALL_TIMEOUT_MS + 120_000,
}, () => {
  let dir: string;
  let fx: RelayFixture;
  /** Set once the install worked: the dir to run from and the environment that finds `ptyrelay`. */
  let installed: { elsewhere: string; bin: string; userEnv: NodeJS.ProcessEnv } | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ptr-install-'));
    fx = await startRelay();
  });
  afterAll(async () => {
    await fx?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('npm pack, npm install --offline into a temp prefix, then ptyrelay --version and ls elsewhere', async () => {
    // `npm test` built dist/ already; packing must not rebuild it (prepare) under the running suite.
    const pack = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
      cwd: ROOT,
      timeoutMs: PACK_TIMEOUT_MS,
    });
    expect(pack.code, pack.stderr).toBe(0);
    const tarball = join(dir, JSON.parse(pack.stdout)[0].filename);
    const files: string[] = JSON.parse(pack.stdout)[0].files.map((f: { path: string }) => f.path);
    expect(files).toContain('dist/bin/ptyrelay.js');
    expect(files).toContain('dist/stub/stub.cjs');

    const prefix = join(dir, 'prefix');
    mkdirSync(prefix);
    const { manifest, lock } = installLock(tarball);
    writeFileSync(join(prefix, 'package.json'), JSON.stringify(manifest));
    writeFileSync(join(prefix, 'package-lock.json'), JSON.stringify(lock));
    const env: NodeJS.ProcessEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' };
    // node-pty compiles against the local Node headers when present (no header download offline).
    if (!env.npm_config_nodedir && existsSync(SYSTEM_NODE_HEADERS)) env.npm_config_nodedir = '/usr';
    const install = await run('npm', ['install', '--offline', '--omit=dev', '--prefix', prefix], {
      cwd: prefix,
      env,
      timeoutMs: INSTALL_TIMEOUT_MS,
    });
    expect(install.code, `${install.stdout}\n${install.stderr}`).toBe(0);

    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    const bin = join(prefix, 'node_modules', '.bin');
    const userEnv: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      PTYRELAY_URL: fx.url,
      PTYRELAY_TOKEN: TEST_TOKEN,
    };
    const version = await run('ptyrelay', ['--version'], { cwd: elsewhere, env: userEnv, timeoutMs: 30_000 });
    expect(version.code, version.stderr).toBe(0);
    const pkgVersion = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
    expect(version.stdout).toMatch(
      new RegExp(`^ptyrelay ${pkgVersion.replace(/\./g, '\\.')} \\(stub build [0-9a-f]{12}, node v`),
    );

    const { id } = await fx.local.provider.spawn({ cols: 80, rows: 24, command: 'sleep', args: ['300'] });
    const ls = await run('ptyrelay', ['ls'], { cwd: elsewhere, env: userEnv, timeoutMs: 30_000 });
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/^ID +PID +OWNER/);
    expect(ls.stdout).toContain(id);
    await fx.local.provider.shutdown(id, { immediate: true });
    installed = { elsewhere, bin, userEnv };
  });

  it.skipIf(!capability('node-matrix', missingNodeBuilds(OTHER_NODES)))(
    'the installed ptyrelay runs under Node 22 and 26 (the node its PATH finds first)',
    async () => {
      expect(installed, 'the install (test above) worked').toBeDefined();
      const { elsewhere, bin, userEnv } = installed!;
      const builds = nodeBuilds();
      const { id } = await fx.local.provider.spawn({ cols: 80, rows: 24, command: 'sleep', args: ['300'] });
      try {
        for (const major of OTHER_NODES) {
          const node = builds.get(major)!;
          // The installed bin is `#!/usr/bin/env node`: the first node on PATH runs it.
          const env = { ...userEnv, PATH: `${join(node.dir, 'bin')}:${bin}:${process.env.PATH}` };
          const version = await run('ptyrelay', ['--version'], { cwd: elsewhere, env, timeoutMs: 30_000 });
          expect(version.code, version.stderr).toBe(0);
          expect(version.stdout).toMatch(
            new RegExp(
              `^ptyrelay ${escaped(PKG_VERSION)} \\(stub build [0-9a-f]{12}, node v${escaped(node.version)}\\)\n$`,
            ),
          );
          const ls = await run('ptyrelay', ['ls'], { cwd: elsewhere, env, timeoutMs: 30_000 });
          expect(ls.code, `Node ${major}: ${ls.stderr}`).toBe(0);
          expect(ls.stdout).toMatch(/^ID +PID +OWNER/);
          expect(ls.stdout).toContain(id);
        }
      } finally {
        await fx.local.provider.shutdown(id, { immediate: true });
      }
    },
  );
});
