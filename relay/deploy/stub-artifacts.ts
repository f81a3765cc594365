import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, posix } from 'node:path';
import { PtyRelayError } from '../../provider/errors.js';
import { packageRoot, stubBundlePath } from '../core/stub-bundle.js';
import { prebuiltPinProblem } from './pty-prebuild-pins.js';
import { partMismatch, stubPartFiles } from './stub-parts.js';

/** Remote platforms the stub ships a `node-pty` binary for. */
export type StubPlatform = 'linux-x64' | 'linux-arm64';
export const STUB_PLATFORMS: readonly StubPlatform[] = ['linux-x64', 'linux-arm64'];

/** One file of the stub install dir. */
export interface StubArtifactFile {
  /** Relative to the install dir, posix separators. */
  path: string;
  /** Absolute local path the bytes come from. */
  source: string;
  size: number;
  /** Hex sha256 of the content. */
  sha256: string;
  /** Permission bits the file gets on the host. */
  mode: number;
}

/** Everything that goes into one stub install dir, content-addressed by its manifest. */
export interface StubArtifacts {
  platform: StubPlatform;
  /** ptyrelay's package.json version. */
  version: string;
  /** First 12 hex digits of the sha256 of the manifest ({@link manifestJson}). */
  sha12: string;
  /** `stub-<version>-<sha12>`, the install dir's name. */
  dirName: string;
  /** Sorted by path. */
  files: StubArtifactFile[];
  totalBytes: number;
  /** Where `pty.node` came from (for logs). */
  nativeSource: string;
  /** Highest `GLIBC_x.y` symbol version `pty.node` needs; hosts with an older glibc cannot load it. */
  minGlibc?: string;
}

const PTY_NODE_PATH = 'node_modules/node-pty/build/Release/pty.node';
/** The optional addon, beside the bundle where the daemon looks for it: heap trimming (agent-stub/native/heap-trim.ts). */
const ADDON_PATHS = ['native/malloc-trim.node'];
/** node-pty's loader (lib/utils.js loadNativeModule) looks in build/Release first. */
const PTY_LIB_DIR = 'node_modules/node-pty/lib';
const EXECUTABLE_MODE = 0o755;
const REGULAR_MODE = 0o644;
/** Where scripts/fetch-pty-prebuilds.mjs unpacks `@lydell/node-pty-linux-*` binaries. */
const VENDOR_PREBUILDS_DIR = join('vendor', 'node-pty-prebuilds');
/** ELF e_machine values, to refuse a binary built for the wrong CPU. */
const ELF_MACHINE: Record<StubPlatform, number> = { 'linux-x64': 0x3e, 'linux-arm64': 0xb7 };
/** Offset of e_machine in an ELF header (same for 32- and 64-bit). */
const ELF_MACHINE_OFFSET = 18;
const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);
/** Windows-only modules of node-pty that a Linux host never loads. */
const WINDOWS_ONLY_MODULE = /^\.\/(windows|conpty)/i;

/** Maps `uname -sm` output to a platform; undefined for anything the stub has no binary for. */
export function platformFromUname(unameSm: string): StubPlatform | undefined {
  const [os, machine] = unameSm.trim().split(/\s+/);
  if (os !== 'Linux') return undefined;
  if (machine === 'x86_64' || machine === 'amd64') return 'linux-x64';
  if (machine === 'aarch64' || machine === 'arm64') return 'linux-arm64';
  return undefined;
}

/** The canonical manifest text that {@link StubArtifacts.sha12} hashes and `.complete` records. */
export function manifestJson(a: Pick<StubArtifacts, 'platform' | 'version' | 'files'>): string {
  const files = a.files.map(({ path, size, sha256, mode }) => ({ path, size, sha256, mode }));
  return JSON.stringify({ platform: a.platform, version: a.version, files });
}

interface NativeCandidate {
  path: string;
  label: string;
}

function resolveFrom(root: string, request: string): string | undefined {
  try {
    return createRequire(join(root, 'package.json')).resolve(request);
  } catch {
    return undefined;
  }
}

function elfMachine(path: string): number | undefined {
  const head = readFileSync(path).subarray(0, ELF_MACHINE_OFFSET + 2);
  if (head.length < ELF_MACHINE_OFFSET + 2 || !head.subarray(0, 4).equals(ELF_MAGIC)) return undefined;
  return head.readUInt16LE(ELF_MACHINE_OFFSET);
}

/** Highest glibc symbol version referenced by a shared object, e.g. `2.34`. */
function glibcFloor(path: string): string | undefined {
  const text = readFileSync(path).toString('latin1');
  let best: number[] | undefined;
  for (const m of text.matchAll(/GLIBC_(\d+)\.(\d+)(?:\.(\d+))?/g)) {
    const v = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
    if (!best || compareVersions(v, best) > 0) best = v;
  }
  return best ? (best[2] ? best.join('.') : `${best[0]}.${best[1]}`) : undefined;
}

/** Compares dotted numeric versions given as number arrays. */
export function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

const parseVersion = (v: string): number[] => v.split('.').map(Number);

/**
 * Binaries that fit node-pty's lib for `platform`: a prebuilt `@lydell/node-pty-<platform>` of the
 * same version (vendored or installed), and the repo's own build when the platform is this machine's.
 */
function nativeCandidates(
  root: string,
  platform: StubPlatform,
  ptyVersion: string,
  refused: string[],
): NativeCandidate[] {
  const out: NativeCandidate[] = [];
  const prebuilt: NativeCandidate[] = [];
  const local = `${process.platform}-${process.arch}` === platform;
  const ptyPkg = resolveFrom(root, 'node-pty/package.json');
  if (local && ptyPkg) {
    out.push({ path: join(dirname(ptyPkg), 'build', 'Release', 'pty.node'), label: 'node-pty build' });
  }
  const vendored = join(root, VENDOR_PREBUILDS_DIR, platform);
  const vendoredInfo = join(vendored, 'source.json');
  if (existsSync(vendoredInfo) && JSON.parse(readFileSync(vendoredInfo, 'utf8')).version === ptyVersion) {
    prebuilt.push({ path: join(vendored, 'pty.node'), label: `vendored @lydell/node-pty-${platform}` });
  }
  const lydellPkg = resolveFrom(root, `@lydell/node-pty-${platform}/package.json`);
  if (lydellPkg && JSON.parse(readFileSync(lydellPkg, 'utf8')).version === ptyVersion) {
    prebuilt.push({ path: join(dirname(lydellPkg), 'pty.node'), label: `@lydell/node-pty-${platform}` });
  }
  // A downloaded binary is shipped only when it is the one pinned in the repo.
  for (const c of prebuilt) {
    if (!existsSync(c.path)) continue;
    const problem = prebuiltPinProblem(
      platform,
      ptyVersion,
      createHash('sha256').update(readFileSync(c.path)).digest('hex'),
    );
    if (problem) refused.push(`${c.label}: ${problem}`);
    else out.push(c);
  }
  return out.filter((c) => existsSync(c.path) && elfMachine(c.path) === ELF_MACHINE[platform]);
}

/** Follows `require('./x')` from lib/index.js, skipping Windows-only modules. Paths relative to lib/. */
function runtimeLibFiles(libDir: string): string[] {
  const seen = new Set<string>();
  const queue = ['index.js'];
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const src = readFileSync(join(libDir, file), 'utf8');
    for (const m of src.matchAll(/require\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g)) {
      if (WINDOWS_ONLY_MODULE.test(m[1]!)) continue;
      const rel = posix.normalize(posix.join(posix.dirname(file), m[1]!));
      queue.push(rel.endsWith('.js') ? rel : `${rel}.js`);
    }
  }
  return [...seen].sort();
}

function fileEntry(path: string, source: string, mode: number): StubArtifactFile {
  const bytes = readFileSync(source);
  return { path, source, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), mode };
}

/**
 * The addons built beside `stub` (scripts/build-native.mjs), each when it is there and for the
 * platform's CPU: they are built for this machine only, and a host of another CPU runs without them.
 */
function addonFiles(stub: string, platform: StubPlatform): StubArtifactFile[] {
  return ADDON_PATHS.flatMap((rel) => {
    const path = join(dirname(stub), rel);
    if (!existsSync(path) || elfMachine(path) !== ELF_MACHINE[platform]) return [];
    return [fileEntry(rel, path, EXECUTABLE_MODE)];
  });
}

const cache = new Map<StubPlatform, { key: string; artifacts: StubArtifacts }>();

/** Cache key: the chosen sources and their size/mtime, so a rebuilt stub or binary is rehashed. */
function statKey(paths: string[]): string {
  return paths
    .map((p) => {
      const st = statSync(p);
      return `${p}:${st.size}:${st.mtimeMs}`;
    })
    .join('|');
}

/**
 * Lists the files of the stub install dir for `platform`: `stub.cjs` and its parts (stub-parts.ts), a minimal
 * `node_modules/node-pty` (package.json, LICENSE, the Linux runtime lib files, `pty.node`).
 * Among usable binaries the one needing the oldest glibc wins (the prebuilt @lydell binaries target
 * older glibc than a build on this machine). `stub` is the bundle to ship (default: this package's).
 * Results are cached per platform until a source changes.
 * @throws PtyRelayError UNSUPPORTED_PLATFORM when no `pty.node` for the platform is available.
 */
export function collectStubArtifacts(platform: StubPlatform, stub = stubBundlePath()): StubArtifacts {
  const root = packageRoot();
  const ptyPkgPath = resolveFrom(root, 'node-pty/package.json');
  if (!ptyPkgPath) throw new PtyRelayError('CONFIG_INVALID', 'node-pty is not installed');
  const ptyRoot = dirname(ptyPkgPath);
  const ptyVersion: string = JSON.parse(readFileSync(ptyPkgPath, 'utf8')).version;
  const refused: string[] = [];
  const candidates = nativeCandidates(root, platform, ptyVersion, refused);
  if (candidates.length === 0) {
    throw new PtyRelayError(
      'UNSUPPORTED_PLATFORM',
      `no node-pty ${ptyVersion} binary for ${platform}; run \`npm run build\` with registry access ` +
        `(it fetches @lydell/node-pty-${platform}) or install it${refused.length ? ` (refused: ${refused.join('; ')})` : ''}`,
      { platform, ...(refused.length ? { refused } : {}) },
    );
  }
  const floors = candidates.map((c) => glibcFloor(c.path));
  let pick = 0;
  for (let i = 1; i < candidates.length; i++) {
    const [a, b] = [floors[i], floors[pick]];
    if (a && (!b || compareVersions(parseVersion(a), parseVersion(b)) < 0)) pick = i;
  }
  const native = candidates[pick]!;
  const addons = ADDON_PATHS.map((rel) => join(dirname(stub), rel)).filter((p) => existsSync(p));
  const parts = stubPartFiles(stub);
  const key = statKey([stub, native.path, ptyPkgPath, ...addons, ...parts.map((p) => p.source)]);
  const hit = cache.get(platform);
  if (hit?.key === key) return hit.artifacts;

  const version: string = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
  const libDir = join(ptyRoot, 'lib');
  const files = [
    fileEntry('stub.cjs', stub, REGULAR_MODE),
    ...parts.map((p) => {
      // Hashed once, here, for the manifest: a part of another build is refused.
      const f = fileEntry(p.path, p.source, REGULAR_MODE);
      if (f.sha256 !== p.sha256) throw partMismatch(p.source, stub);
      return f;
    }),
    fileEntry('node_modules/node-pty/package.json', ptyPkgPath, REGULAR_MODE),
    ...(existsSync(join(ptyRoot, 'LICENSE'))
      ? [fileEntry('node_modules/node-pty/LICENSE', join(ptyRoot, 'LICENSE'), REGULAR_MODE)]
      : []),
    ...runtimeLibFiles(libDir).map((f) => fileEntry(`${PTY_LIB_DIR}/${f}`, join(libDir, f), REGULAR_MODE)),
    fileEntry(PTY_NODE_PATH, native.path, EXECUTABLE_MODE),
    ...addonFiles(stub, platform),
  ].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const sha12 = createHash('sha256')
    .update(manifestJson({ platform, version, files }))
    .digest('hex')
    .slice(0, 12);
  const artifacts: StubArtifacts = {
    platform,
    version,
    sha12,
    dirName: `stub-${version}-${sha12}`,
    files,
    totalBytes: files.reduce((n, f) => n + f.size, 0),
    nativeSource: `${native.label} (${native.path})`,
    minGlibc: floors[pick],
  };
  cache.set(platform, { key, artifacts });
  return artifacts;
}
