import { STUB_LIBRARY_ENV } from '../../provider/daemon-runtime/stub-paths.js';

/**
 * The node helper the deployer runs on the host (`node -` from a here-document in an `/bin/sh -s`
 * script, so no login shell parses it) and its ops; result lines carry a random marker so MOTD
 * and rc-file noise on stdout cannot be mistaken for results. The probe is in probe-script.ts.
 */

/** A marker unlikely to appear in rc-file output: letters and digits only, safe in every shell. */
export function newMarker(): string {
  return `PTYRELAY${Math.random().toString(36).slice(2, 10).toUpperCase()}X`;
}

/** One operation of {@link helperScript}. */
export type HelperOp =
  | {
      op: 'verify';
      dir: string;
      files: { path: string; size: number; sha256: string }[];
      /** Only hash when `.complete` exists. */
      requireComplete: boolean;
      /** Refresh `.complete`'s mtime when intact: GC spares recently used dirs. */
      touch: boolean;
    }
  | {
      op: 'gc';
      base: string;
      keep: string;
      graceMs: number;
      /** Also remove leftover temp, replaced and stale-lock dirs (only safe while holding the lock). */
      underLock: boolean;
      /** Skip unless every earlier verify op found its dir complete and intact. */
      onlyIfIntact: boolean;
    }
  | { op: 'now' }
  | {
      /** One file-system call (the exec-channel stand-in for an SFTP request); never throws. */
      op: 'fs';
      call: FsCall;
      args: (string | number)[];
    }
  | {
      /**
       * Creates `dir` (0700) and checks it can hold `needBytes` more, takes a file, and (with
       * `exec`) runs programs from it: the causes retrying will not fix, found before an upload.
       */
      op: 'checkDir';
      dir: string;
      needBytes: number;
      exec: boolean;
      /** Refuse a dir another user owns or may write (DIR_INSECURE): the install dir. */
      private?: boolean;
    }
  | {
      op: 'ensure';
      /** The installed stub.cjs: loaded in the helper's own node, whose `ensureDaemon` runs. */
      stub: string;
      /** `ensure`'s arguments (`--runtime-dir D`, daemon flags). */
      args: string[];
      /** Skip unless every earlier verify op found its dir complete and intact. */
      onlyIfIntact: boolean;
    };

/** The file-system calls of an `fs` op (node's `fs.*Sync` of the same name, `stat` → lstat). */
export type FsCall =
  | 'mkdir'
  | 'stat'
  | 'rename'
  | 'writeFile'
  | 'readText'
  | 'unlink'
  | 'rmdir'
  | 'utimes'
  | 'rmrf';

/** Result of an `fs` op: the call's value, or its errno code and message. */
export type FsResult = { ok: unknown } | { err: string; message: string };

/** Result of a `checkDir` op: fine, or what is wrong (errno of the failed call, if any). */
export type CheckDirResult =
  | { ok: true }
  | {
      problem: 'DIR_NOT_WRITABLE' | 'DISK_FULL' | 'DIR_NOEXEC' | 'DIR_INSECURE';
      message: string;
      errno?: string;
    };

/** Result of an `ensure` op: the stub's `EnsureReport`, or why there is none. */
export type EnsureResult =
  | { socketPath: string; buildId: string; legacy: { buildId: string; socketPath: string }[] }
  | { skipped: true }
  | { error: string; code?: string; details?: Record<string, unknown> };

/** Result of a `verify` op. */
export interface VerifyResult {
  complete: boolean;
  bad: { path: string; reason: string }[];
}

/** Result of a `gc` op (`skipped` when `onlyIfIntact` held it back or /proc is unreadable). */
export interface GcResult {
  removed: string[];
  kept: { name: string; reason: string }[];
  skipped?: boolean;
}

/**
 * One file-system call for the `fs` helper op and the exec fs session: node's `fs.*Sync` of the
 * same name (`stat` → lstat); never throws, answers `{ ok }` or `{ err: errno, message }`.
 * Needs `fs` in scope.
 */
export const FS_CALL_JS = `function fsCall(o) {
  const a = o.args;
  try {
    switch (o.call) {
      case 'mkdir': fs.mkdirSync(a[0], { mode: a[1] }); return { ok: null };
      case 'stat': { const st = fs.lstatSync(a[0]); return { ok: { mtimeMs: st.mtimeMs } }; }
      case 'rename': fs.renameSync(a[0], a[1]); return { ok: null };
      case 'writeFile': fs.writeFileSync(a[0], a[1], { mode: a[2] }); return { ok: null };
      case 'readText': return { ok: fs.readFileSync(a[0], 'utf8') };
      case 'unlink': fs.unlinkSync(a[0]); return { ok: null };
      case 'rmdir': fs.rmdirSync(a[0]); return { ok: null };
      case 'utimes': fs.utimesSync(a[0], a[1], a[1]); return { ok: null };
      case 'rmrf': fs.rmSync(a[0], { recursive: true, force: true }); return { ok: null };
    }
    return { err: 'EINVAL', message: 'unknown call ' + o.call };
  } catch (e) {
    return { err: String(e.code || 'EIO'), message: String(e.message) };
  }
}`;

// Plain CommonJS for node >= 18 on the host; reads its parameters from the `P` constant prepended to it.
const HELPER_BODY = `
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
let intact = true;
// The daemon runs what the install dir holds: a dir another user may write (or owns) could hand
// them the user's shell, so it is never used, however intact its files are.
function insecure(dir) {
  const st = fs.lstatSync(dir);
  const uid = process.getuid();
  if (st.uid !== uid) return dir + ' is owned by uid ' + st.uid + ', not by you (uid ' + uid + '); fix: use a dir of your own';
  if (st.mode & 0o022) return dir + ' is mode 0' + (st.mode & 0o777).toString(8) + ': other users could replace the stub; fix: chmod go-w ' + dir;
  return undefined;
}
function verify(o) {
  const complete = fs.existsSync(path.join(o.dir, '.complete'));
  const bad = [];
  if (o.requireComplete && !complete) { intact = false; return { complete, bad }; }
  for (const d of [path.dirname(o.dir), o.dir]) {
    let why;
    try { why = insecure(d); } catch (e) { why = undefined; }
    if (why) { intact = false; bad.push({ path: d, reason: 'insecure: ' + why }); return { complete, bad }; }
  }
  for (const f of o.files) {
    const p = path.join(o.dir, f.path);
    let st;
    try { st = fs.lstatSync(p); } catch (e) { bad.push({ path: f.path, reason: 'missing' }); continue; }
    if (!st.isFile()) { bad.push({ path: f.path, reason: 'not a regular file' }); continue; }
    if (st.size !== f.size) { bad.push({ path: f.path, reason: 'size ' + st.size + ' != ' + f.size }); continue; }
    const h = crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex');
    if (h !== f.sha256) bad.push({ path: f.path, reason: 'sha256 mismatch' });
  }
  if (!complete || bad.length > 0) intact = false;
  else if (o.touch) { const now = new Date(); fs.utimesSync(path.join(o.dir, '.complete'), now, now); }
  return { complete, bad };
}
function stubDirsInUse() {
  const used = new Set();
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(pid)) continue;
    let args;
    try { args = fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\\0'); } catch (e) { continue; }
    for (const a of args) {
      if (path.basename(a) !== 'stub.cjs') continue;
      let abs = a;
      if (!path.isAbsolute(a)) {
        try { abs = path.resolve(fs.readlinkSync('/proc/' + pid + '/cwd'), a); } catch (e) { continue; }
      }
      used.add(path.basename(path.dirname(abs)));
    }
  }
  return used;
}
function mtimeMs(p) { try { return fs.statSync(p).mtimeMs; } catch (e) { return undefined; } }
function gc(o) {
  if (o.onlyIfIntact && !intact) return { removed: [], kept: [], skipped: true };
  let used;
  try { used = stubDirsInUse(); } catch (e) { return { removed: [], kept: [], skipped: true }; }
  const removed = [];
  const kept = [];
  const now = Date.now();
  for (const name of fs.readdirSync(o.base)) {
    if (name === o.keep) continue;
    const full = path.join(o.base, name);
    if (/^stub-/.test(name)) {
      if (used.has(name)) { kept.push({ name, reason: 'in use' }); continue; }
      const t = mtimeMs(path.join(full, '.complete')) ?? mtimeMs(full) ?? 0;
      if (now - t < o.graceMs) { kept.push({ name, reason: 'recently used' }); continue; }
    } else if (!(o.underLock && /^(\\.stub-.*\\.(tmp|old)-|install\\.lock\\.stale-)/.test(name))) continue;
    fs.rmSync(full, { recursive: true, force: true });
    removed.push(name);
  }
  return { removed, kept };
}
async function ensure(o) {
  if (o.onlyIfIntact && !intact) return { skipped: true };
  try {
    process.env[P.libraryEnv] = '1';
    const stub = require(o.stub);
    delete process.env[P.libraryEnv];
    return await stub.ensureDaemon(o.stub, o.args);
  } catch (e) {
    delete process.env[P.libraryEnv];
    // A PtyRelayError of the stub (a dir it cannot use) keeps its code for the relay.
    const typed = e && e.name === 'PtyRelayError' ? { code: e.code, details: Object.assign({ message: e.message }, e.details) } : {};
    return { error: String((e && e.stack) || e).slice(-2000), ...typed };
  }
}
${FS_CALL_JS}
const UNWRITABLE = ['EROFS', 'EACCES', 'EPERM'];
const FULL = ['ENOSPC', 'EDQUOT'];
function checkDir(o) {
  const probe = path.join(o.dir, '.ptyrelay-check-' + process.pid);
  const classify = (e) => {
    if (UNWRITABLE.includes(e.code)) return { problem: 'DIR_NOT_WRITABLE', errno: e.code, message: String(e.message) };
    if (FULL.includes(e.code)) return { problem: 'DISK_FULL', errno: e.code, message: String(e.message) };
    throw e;
  };
  // One level at a time: a recursive mkdir on a read-only mount reports ENOENT, not EROFS.
  try {
    const parts = path.resolve(o.dir).split('/');
    for (let i = 2; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      if (!fs.existsSync(p)) fs.mkdirSync(p, { mode: 0o700 });
    }
  } catch (e) { return classify(e); }
  const why = o.private ? insecure(o.dir) : undefined;
  if (why) return { problem: 'DIR_INSECURE', message: why };
  try {
    fs.writeFileSync(probe, '#!/bin/sh\\nexit 0\\n', { mode: 0o700 });
  } catch (e) {
    try { fs.unlinkSync(probe); } catch (e2) { /* never created */ }
    return classify(e);
  }
  try {
    // noexec first: more room would not help a dir that cannot run what is put there.
    if (o.exec) {
      const r = require('child_process').spawnSync(probe, [], { stdio: 'ignore' });
      if (r.error && (r.error.code === 'EACCES' || r.error.code === 'EPERM'))
        return { problem: 'DIR_NOEXEC', errno: r.error.code, message: 'cannot run programs from it (mounted noexec?)' };
    }
    if (fs.statfsSync) {
      const s = fs.statfsSync(o.dir);
      const free = Number(s.bavail) * Number(s.bsize);
      if (free < o.needBytes)
        return { problem: 'DISK_FULL', message: free + ' bytes free, ' + o.needBytes + ' needed' };
    }
    return { ok: true };
  } finally {
    try { fs.unlinkSync(probe); } catch (e) { /* gone already */ }
  }
}
(async () => {
  const out = [];
  for (const o of P.ops) {
    if (o.op === 'verify') out.push(verify(o));
    else if (o.op === 'gc') out.push(gc(o));
    else if (o.op === 'now') out.push(Date.now());
    else if (o.op === 'fs') out.push(fsCall(o));
    else if (o.op === 'checkDir') out.push(checkDir(o));
    else if (o.op === 'ensure') out.push(await ensure(o));
  }
  // writeSync: the exit below must not cut the line off (stdout to a pipe is asynchronous).
  fs.writeSync(1, '\\n' + P.marker + JSON.stringify(P.meta ? [P.meta, ...out] : out) + '\\n');
  process.exit(0);
})().catch((e) => { process.stderr.write(String((e && e.stack) || e) + '\\n'); process.exit(1); });
`;

/** Where {@link firstContactHelper} paths start with the host's `$HOME`. */
export const HOME_TOKEN = '@HOME@';
/**
 * Where they start with the host's cache dir: `$XDG_CACHE_HOME` when absolute, else `$HOME/.cache`
 * (the rule of `defaultInstallBase` in provider/stub-paths.ts, which the helper cannot import).
 */
export const CACHE_TOKEN = '@CACHE@';

/**
 * Picks the ops for the helper's own platform and home (the probe runs it before the relay
 * knows either): {@link HOME_TOKEN} at the start of a path stands for `$HOME`. Results are
 * prefixed with `{ platform, home }` so the relay can check they match what the probe reported.
 */
const FIRST_CONTACT_PROLOGUE = `
const home = process.env.HOME || '';
const platform = process.platform + '-' + process.arch;
const picked = home.startsWith('/') ? P.byPlatform[platform] || [] : [];
const token = ${JSON.stringify(HOME_TOKEN)};
const cacheToken = ${JSON.stringify(CACHE_TOKEN)};
const xdgCache = process.env.XDG_CACHE_HOME || '';
const cache = xdgCache.startsWith('/') ? xdgCache : home + '/.cache';
const at = (v) =>
  typeof v !== 'string' ? v
  : v.startsWith(token) ? home + v.slice(token.length)
  : v.startsWith(cacheToken) ? cache + v.slice(cacheToken.length)
  : v;
P.ops = picked.map((o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, at(v)])));
P.meta = { platform, home };
`;

/** The node helper for `ops`; run it as `node -` with this on stdin. Prints `<marker>[results…]`. */
export function helperScript(marker: string, ops: HelperOp[]): string {
  const p = { marker, ops, libraryEnv: STUB_LIBRARY_ENV };
  return `'use strict';\nconst P = ${JSON.stringify(p)};\n${HELPER_BODY}`;
}

/**
 * The helper the probe runs with the node it picked ({@link probeScript}): the ops of the host's
 * platform (`byPlatform`), paths under {@link HOME_TOKEN}. Prints `<marker>self=<version>
 * <execPath>`, then, on node >= `minMajor`, `<marker>quick=[{ platform, home }, results…]`.
 */
export function firstContactHelper(
  marker: string,
  minMajor: number,
  byPlatform: Record<string, HelperOp[]>,
): string {
  const p = { marker: `${marker}quick=`, byPlatform, libraryEnv: STUB_LIBRARY_ENV };
  const body = `'use strict';\nconst P = ${JSON.stringify(p)};\n${FIRST_CONTACT_PROLOGUE}${HELPER_BODY}`;
  // Syntax any node parses: an old one reports its version and stops (the body needs a new one).
  return `var fs = require('fs');
var v = process.version;
fs.writeSync(1, '\\n' + ${JSON.stringify(marker)} + 'self=' + v + ' ' + process.execPath + '\\n');
if (Number(v.slice(1).split('.')[0]) >= ${Math.floor(minMajor)}) new Function('require', ${JSON.stringify(body)})(require);
`;
}

/** Values of the `<marker>key=value` lines, grouped by key in output order. */
export function parseMarkedLines(stdout: string, marker: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of stdout.split('\n')) {
    const at = line.indexOf(marker);
    if (at < 0) continue;
    const rest = line.slice(at + marker.length);
    const eq = rest.indexOf('=');
    if (eq < 0) continue;
    const key = rest.slice(0, eq);
    out.set(key, [...(out.get(key) ?? []), rest.slice(eq + 1)]);
  }
  return out;
}

/** The JSON value printed after `marker` by {@link helperScript}, or undefined. */
export function parseHelperOutput(stdout: string, marker: string): unknown[] | undefined {
  const line = stdout.split('\n').find((l) => l.startsWith(marker));
  if (!line) return undefined;
  try {
    return JSON.parse(line.slice(marker.length));
  } catch {
    return undefined;
  }
}
