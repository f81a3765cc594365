import type { Client } from 'ssh2';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import { probeScript } from './probe-script.js';
import { newMarker, parseMarkedLines } from './remote-scripts.js';
import { runSh } from './sh-exec.js';
import { compareVersions, platformFromUname, type StubPlatform } from './stub-artifacts.js';

/** A node binary the probe found on the host. */
export interface NodeCandidate {
  /** Where it was found: `path`, `login`, `login-interactive`, `bash-login-interactive`, `bash-interactive`. */
  source: string;
  /** `v20.19.2` */
  version: string;
  major: number;
  /** The binary's own `process.execPath` (no nvm/fnm/volta shim in between). */
  execPath: string;
}

/** What {@link probeHost} learned. */
export interface ProbeResult {
  platform: StubPlatform;
  uname: string;
  home: string;
  /** The host's `$XDG_CACHE_HOME` (empty when unset). */
  xdgCache: string;
  glibc: string;
  node: NodeCandidate;
  /** One line for progress output. */
  summary: string;
  /** What the `helper` of {@link ProbeOptions} printed (`[{ platform, home }, results…]`), if it ran. */
  helperResults?: unknown[];
}

/** Options for {@link probeHost}. */
export interface ProbeOptions {
  minNodeMajor: number;
  /** The glibc the platform's node-pty binary needs, if known. */
  minGlibc?: (p: StubPlatform) => string | undefined;
  /** Node script the picked node runs right away, in the same remote command (built with the probe's marker). */
  helper?: (marker: string) => string;
}

/** The probe may start up to four login shells (nvm init alone can take a second). */
const PROBE_TIMEOUT_MS = 60_000;
/** Error messages carry the end of stderr, where the reason usually is. */
const STDERR_TAIL_BYTES = 2048;

const parseVersion = (s: string): number[] => s.split('.').map(Number);

/**
 * Runs the one-exec probe ({@link probeScript}) and picks the first node of at least
 * `minNodeMajor` (plain PATH before login shells).
 * @throws PtyRelayError UNSUPPORTED_PLATFORM (details.uname), NODE_MISSING, NODE_TOO_OLD
 * (details.version), DEPLOY_FAILED when the probe itself fails.
 */
export async function probeHost(conn: Client, opts: ProbeOptions): Promise<ProbeResult> {
  const marker = newMarker();
  const r = await runSh(conn, probeScript(marker, opts.minNodeMajor, opts.helper?.(marker)), {
    timeoutMs: PROBE_TIMEOUT_MS,
  });
  const kv = parseMarkedLines(r.stdout, marker);
  const one = (k: string): string => kv.get(k)?.at(-1) ?? '';
  if (!kv.has('end')) {
    throw new PtyRelayError('DEPLOY_FAILED', `host probe failed (exit ${r.code ?? r.signal})`, {
      stderr: r.stderr.slice(-STDERR_TAIL_BYTES),
      stdout: r.stdout.slice(-STDERR_TAIL_BYTES),
    });
  }
  const uname = one('uname');
  const platform = platformFromUname(uname);
  if (!platform) {
    throw new PtyRelayError('UNSUPPORTED_PLATFORM', `ptyrelay has no stub for ${uname || 'this host'}`, {
      uname,
    });
  }
  const glibc = /glibc\s+([\d.]+)/.exec(one('glibc'))?.[1];
  if (!glibc) {
    throw new PtyRelayError('UNSUPPORTED_PLATFORM', `${uname} without glibc (musl?) cannot load node-pty`, {
      uname,
    });
  }
  const node = pickNode(kv.get('cand') ?? [], opts.minNodeMajor, uname, one('shell'));
  const need = withUname(uname, () => opts.minGlibc?.(platform));
  if (need && compareVersions(parseVersion(glibc), parseVersion(need)) < 0) {
    throw new PtyRelayError(
      'UNSUPPORTED_PLATFORM',
      `the node-pty binary for ${platform} needs glibc >= ${need}; the host has ${glibc}`,
      { uname, platform, glibc, needGlibc: need },
    );
  }
  const home = one('home');
  if (!home.startsWith('/'))
    throw new PtyRelayError('DEPLOY_FAILED', `host reports no usable $HOME (${home})`);
  const summary = `${uname}, glibc ${glibc}, node ${node.version} (${node.execPath}, via ${node.source})`;
  const xdgCache = one('cache');
  return { platform, uname, home, xdgCache, glibc, node, summary, helperResults: parseResults(one('quick')) };
}

function parseResults(json: string): unknown[] | undefined {
  if (!json) return undefined;
  try {
    const v = JSON.parse(json);
    return Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Adds the host's uname to an UNSUPPORTED_PLATFORM thrown for lack of a binary. */
function withUname<T>(uname: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (!isPtyRelayError(err, 'UNSUPPORTED_PLATFORM')) throw err;
    throw new PtyRelayError(err.code, err.message, { ...err.details, uname });
  }
}

function pickNode(lines: string[], minMajor: number, uname: string, shell: string): NodeCandidate {
  const cands = lines.flatMap((line): NodeCandidate[] => {
    const m = /^(\S+) (v(\d+)\.\S*) (\/.*)$/.exec(line);
    return m ? [{ source: m[1]!, version: m[2]!, major: Number(m[3]), execPath: m[4]! }] : [];
  });
  const node = cands.find((c) => c.major >= minMajor);
  if (node) return node;
  if (cands.length === 0) {
    throw new PtyRelayError(
      'NODE_MISSING',
      `node was not found on the host (looked on PATH and in login shells). Install Node.js >= ${minMajor} ` +
        '(e.g. `apt install nodejs`, or nvm) so that `node` is on the PATH of a non-interactive ssh ' +
        'command or of your login shell',
      { uname, shell },
    );
  }
  const best = cands.reduce((a, b) => (b.major > a.major ? b : a));
  throw new PtyRelayError(
    'NODE_TOO_OLD',
    `node ${best.version} at ${best.execPath} is too old; ptyrelay needs node >= ${minMajor}`,
    { version: best.version, nodePath: best.execPath, found: cands },
  );
}
