import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isPtyRelayError } from '../../provider/errors.js';
import { packageRoot, stubBundlePath } from '../../relay/core/stub-bundle.js';
import { PTY_PREBUILD_SHA256, prebuiltPinProblem } from '../../relay/deploy/pty-prebuild-pins.js';
import {
  collectStubArtifacts,
  manifestJson,
  platformFromUname,
  type StubArtifacts,
  type StubPlatform,
} from '../../relay/deploy/stub-artifacts.js';
import { stubParts } from '../../relay/deploy/stub-parts.js';
import { capability } from '../support/capabilities.js';

const ROOT = packageRoot();
const VERSION: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
const LOCAL = `${process.platform}-${process.arch}` as StubPlatform;
const PTY_NODE = 'node_modules/node-pty/build/Release/pty.node';
/** The native API node-pty 1.1.0's lib calls (argument lists as the addon spells them in its errors). */
const NATIVE_API = [
  'Usage: pty.fork(file, args, env, cwd, cols, rows, uid, gid, utf8, helperPath, onexit)',
  'Usage: pty.open(cols, rows)',
  'Usage: pty.resize(fd, cols, rows)',
  'Usage: pty.process(fd, tty)',
];
const available = (p: StubPlatform): StubArtifacts | undefined => {
  try {
    return collectStubArtifacts(p);
  } catch {
    return undefined;
  }
};
/** Why no artifacts for `p` can be collected here (undefined when they can). */
const artifactsMissing = (p: StubPlatform): string | undefined => {
  try {
    collectStubArtifacts(p);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
};
const tmpDirs: string[] = [];
afterAll(() => {
  for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
});

/** Copies the artifacts into a fresh install-like dir, as the deployer lays them out on a host. */
function stage(a: StubArtifacts, native = a.files.find((f) => f.path === PTY_NODE)!.source): string {
  const dir = mkdtempSync(join(tmpdir(), 'ptyrelay-artifacts-'));
  tmpDirs.push(dir);
  for (const f of a.files) {
    mkdirSync(dirname(join(dir, f.path)), { recursive: true });
    copyFileSync(f.path === PTY_NODE ? native : f.source, join(dir, f.path));
  }
  return dir;
}

describe('platformFromUname', () => {
  it('maps Linux x86_64 and aarch64, rejects the rest', () => {
    expect(platformFromUname('Linux x86_64')).toBe('linux-x64');
    expect(platformFromUname('Linux aarch64\n')).toBe('linux-arm64');
    expect(platformFromUname('Linux arm64')).toBe('linux-arm64');
    expect(platformFromUname('Darwin arm64')).toBeUndefined();
    expect(platformFromUname('Linux armv7l')).toBeUndefined();
    expect(platformFromUname('FreeBSD amd64')).toBeUndefined();
    expect(platformFromUname('')).toBeUndefined();
  });
});

describe.skipIf(!capability('node-pty', artifactsMissing(LOCAL)))('collectStubArtifacts', () => {
  it('names the dir after version and manifest hash, stably', () => {
    const a = collectStubArtifacts(LOCAL);
    expect(a.dirName).toBe(`stub-${VERSION}-${a.sha12}`);
    expect(a.sha12).toMatch(/^[0-9a-f]{12}$/);
    expect(a.sha12).toBe(createHash('sha256').update(manifestJson(a)).digest('hex').slice(0, 12));
    expect(collectStubArtifacts(LOCAL)).toBe(a); // Cached until a source changes.
    expect(manifestJson(JSON.parse(JSON.stringify(a)))).toBe(manifestJson(a));
  });

  it('ships the bundle and a minimal Linux node-pty with the native binary', () => {
    const a = collectStubArtifacts(LOCAL);
    const paths = a.files.map((f) => f.path);
    expect(paths).toContain('stub.cjs');
    for (const part of ['model-worker.cjs', 'stub-lsp-libs.cjs', 'stub-xterm.cjs'])
      expect(paths).toContain(part);
    expect(paths).toContain('node_modules/node-pty/package.json');
    expect(paths).toContain(PTY_NODE);
    for (const lib of ['index.js', 'unixTerminal.js', 'terminal.js', 'utils.js', 'eventEmitter2.js']) {
      expect(paths).toContain(`node_modules/node-pty/lib/${lib}`);
    }
    expect(paths.filter((p) => /\.map$|\.test\.js$|windows|conpty|\.pdb$|prebuilds\//i.test(p))).toEqual([]);
    expect([...paths].sort()).toEqual(paths);
    expect(a.totalBytes).toBe(a.files.reduce((n, f) => n + f.size, 0));
    for (const f of a.files) {
      expect(f.sha256).toBe(createHash('sha256').update(readFileSync(f.source)).digest('hex'));
    }
    expect(a.files.find((f) => f.path === PTY_NODE)?.mode).toBe(0o755);
    expect(a.minGlibc).toMatch(/^2\.\d+$/);
  });

  it.each(['malloc-trim'])(
    'ships the %s addon beside the bundle when the build made one for this CPU',
    (name) => {
      const addon = join(dirname(stubBundlePath()), 'native', `${name}.node`);
      if (!existsSync(addon)) {
        capability('malloc-trim', `${addon} was not built (no C compiler at build time): nothing to ship`);
        return;
      }
      const f = collectStubArtifacts(LOCAL).files.find((x) => x.path === `native/${name}.node`);
      expect(f?.source).toBe(addon);
      expect(f?.mode).toBe(0o755);
    },
  );

  it('gives each platform its own binary and dir', () => {
    const arm = available('linux-arm64');
    const x64 = available('linux-x64');
    if (!arm || !x64) {
      // Offline build: only the local arch is deployable.
      capability('pty-prebuilds', artifactsMissing(arm ? 'linux-x64' : 'linux-arm64'));
      return;
    }
    expect(arm.dirName).not.toBe(x64.dirName);
    // The addons are built for this machine's CPU only: the other platform ships without them.
    const addons = (a: StubArtifacts) => a.files.filter((f) => f.path.startsWith('native/'));
    expect(addons(LOCAL === 'linux-x64' ? arm : x64)).toEqual([]);
    const bin = (a: StubArtifacts) => a.files.find((f) => f.path === PTY_NODE)!;
    expect(bin(arm).sha256).not.toBe(bin(x64).sha256);
    expect(readFileSync(bin(arm).source).readUInt16LE(18)).toBe(0xb7); // EM_AARCH64
    // Same stub and lib on both: only the native binaries differ.
    const portable = (a: StubArtifacts) => a.files.filter((f) => !f.path.endsWith('.node'));
    expect(portable(arm)).toEqual(portable(x64));
  });

  it('throws UNSUPPORTED_PLATFORM when no binary exists for a platform', () => {
    let err: unknown;
    try {
      collectStubArtifacts('linux-riscv64' as StubPlatform);
    } catch (e) {
      err = e;
    }
    expect(isPtyRelayError(err, 'UNSUPPORTED_PLATFORM')).toBe(true);
  });

  it('every candidate binary exports the native API node-pty lib calls', () => {
    const candidates = [
      join(ROOT, 'node_modules/node-pty/build/Release/pty.node'),
      ...['linux-x64', 'linux-arm64'].map((p) => join(ROOT, 'vendor/node-pty-prebuilds', p, 'pty.node')),
    ].filter(existsSync);
    const lib = readFileSync(join(ROOT, 'node_modules/node-pty/lib/unixTerminal.js'), 'utf8');
    expect(lib).toContain('pty.fork(file, args, parsedEnv, cwd, _this._cols, _this._rows, uid, gid,');
    for (const bin of candidates) {
      const text = readFileSync(bin).toString('latin1');
      for (const usage of NATIVE_API) expect(text, bin).toContain(usage);
    }
  });

  it.each([
    ['the chosen binary', undefined, undefined],
    ['node-pty own build', join(ROOT, 'node_modules/node-pty/build/Release/pty.node'), 'node-pty'],
    [`@lydell ${LOCAL}`, join(ROOT, 'vendor/node-pty-prebuilds', LOCAL, 'pty.node'), 'pty-prebuilds'],
  ] as const)('%s drives a PTY through node-pty lib from a staged install dir', (_name, native, needs) => {
    if (native !== undefined && needs !== undefined && !existsSync(native)) {
      capability(needs, `${native} is missing`);
      return;
    }
    const dir = stage(collectStubArtifacts(LOCAL), native);
    const script = `
      const pty = require(${JSON.stringify(join(dir, 'node_modules/node-pty'))});
      const p = pty.spawn('/bin/sh', ['-c', 'read l; stty size; echo "got:$l"'], { cols: 80, rows: 24 });
      let out = '';
      p.onData((d) => { out += d; });
      setTimeout(() => { p.resize(100, 40); p.write('hi\\r'); }, 100);
      p.onExit((e) => console.log(JSON.stringify({ out, code: e.exitCode, proc: typeof p.process })));`;
    const res = JSON.parse(
      execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 10_000 }),
    );
    expect(res.code).toBe(0);
    expect(res.out).toContain('40 100');
    expect(res.out).toContain('got:hi');
    expect(res.proc).toBe('string');
  });
});

describe('pinned prebuilt pty.node', () => {
  const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');
  const PTY_VERSION: string = JSON.parse(
    readFileSync(join(ROOT, 'node_modules', 'node-pty', 'package.json'), 'utf8'),
  ).version;

  it('ships a prebuilt only when its sha256 is the one pinned for its node-pty version and platform', () => {
    const pinned = PTY_PREBUILD_SHA256[PTY_VERSION]?.['linux-arm64'];
    expect(pinned, `node-pty ${PTY_VERSION} has no pinned prebuilts`).toMatch(/^[0-9a-f]{64}$/);
    expect(prebuiltPinProblem('linux-arm64', PTY_VERSION, pinned!)).toBeUndefined();
    expect(prebuiltPinProblem('linux-arm64', PTY_VERSION, '0'.repeat(64))).toMatch(/is not the pinned/);
    expect(prebuiltPinProblem('linux-arm64', '0.0.1', pinned!)).toMatch(
      /no sha256 is pinned for node-pty 0.0.1/,
    );
  });

  it('what a deploy ships for another platform is the pinned binary', () => {
    const other = (['linux-x64', 'linux-arm64'] as StubPlatform[]).find((p) => p !== LOCAL)!;
    const a = available(other);
    if (!a) {
      capability(
        'pty-prebuilds',
        `no ${other} prebuilt here (offline build); the pin is checked by the unit above only`,
      );
      return;
    }
    const native = a.files.find((f) => f.path === PTY_NODE)!;
    expect(native.sha256).toBe(PTY_PREBUILD_SHA256[PTY_VERSION]?.[other]);
    expect(sha(native.source)).toBe(native.sha256);
  });
});

/**
 * A stub bundle and its parts (scripts/lib/stub-bundle.mjs, relay/deploy/stub-parts.ts): copies
 * of the build's in a fresh dir, one of them missing or changed.
 */
describe.skipIf(!capability('node-pty', artifactsMissing(LOCAL)))('the parts of a stub bundle', () => {
  const PARTS = ['model-worker.cjs', 'stub-lsp-libs.cjs', 'stub-xterm.cjs'];

  function copyBuild(): string {
    const dir = mkdtempSync(join(tmpdir(), 'ptyrelay-parts-'));
    tmpDirs.push(dir);
    for (const f of ['stub.cjs', ...PARTS]) copyFileSync(join(dirname(stubBundlePath()), f), join(dir, f));
    return join(dir, 'stub.cjs');
  }

  it('stub.cjs names each part with its digest, and the deploy ships the parts beside it', () => {
    const stub = copyBuild();
    const parts = stubParts(stub);
    expect(Object.keys(parts).sort()).toEqual(PARTS);
    for (const [file, digest] of Object.entries(parts)) {
      expect(digest).toBe(
        createHash('sha256')
          .update(readFileSync(join(dirname(stub), file)))
          .digest('hex'),
      );
    }
    const shipped = collectStubArtifacts(LOCAL, stub).files.filter((f) => PARTS.includes(f.path));
    expect(shipped.map((f) => f.source).sort()).toEqual(PARTS.map((p) => join(dirname(stub), p)));
  });

  it('a missing or changed part is CONFIG_INVALID, naming the part and the cure', () => {
    const missing = copyBuild();
    rmSync(join(dirname(missing), 'stub-xterm.cjs'));
    const changed = copyBuild();
    writeFileSync(join(dirname(changed), 'stub-lsp-libs.cjs'), '\n', { flag: 'a' });
    for (const [stub, part] of [
      [missing, 'stub-xterm.cjs'],
      [changed, 'stub-lsp-libs.cjs'],
    ] as const) {
      const err = (() => {
        try {
          collectStubArtifacts(LOCAL, stub);
          return undefined;
        } catch (e) {
          return e;
        }
      })();
      expect(isPtyRelayError(err) && err.code).toBe('CONFIG_INVALID');
      expect((err as Error).message).toContain(part);
      expect((err as Error).message).toContain('npm run build');
    }
  });

  it('a parts line that is not a list of names and digests is CONFIG_INVALID', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ptyrelay-parts-'));
    tmpDirs.push(dir);
    for (const [i, line] of [
      '{"x.cjs":"nope"}',
      '{"../x.cjs":"' + '0'.repeat(64) + '"}',
      '{not json}',
    ].entries()) {
      const stub = join(dir, `stub-${i}.cjs`);
      writeFileSync(stub, `/* ptyrelay-stub-parts ${line} */\n"use strict";\n`);
      const err = (() => {
        try {
          stubParts(stub);
          return undefined;
        } catch (e) {
          return e;
        }
      })();
      expect(isPtyRelayError(err) && err.code, line).toBe('CONFIG_INVALID');
    }
  });

  it('a bundle without the parts line has none (a stub of another build shape ships alone)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ptyrelay-parts-'));
    tmpDirs.push(dir);
    writeFileSync(join(dir, 'stub.cjs'), '"use strict";\n');
    expect(stubParts(join(dir, 'stub.cjs'))).toEqual({});
  });
});
