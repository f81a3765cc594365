import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync } from 'node:fs';
import type { Socket } from 'node:net';
import { dirname } from 'node:path';
import { PtyRelayError } from '../errors.js';
import { daemonProcessEnv } from './daemon-allocator.js';
import { assertPrivateRuntime } from './private-dir.js';
import { socketAnswers, tryConnect } from './socket-probe.js';
import {
  bundleBuildId,
  daemonLockPath,
  daemonLogPath,
  daemonSocketPath,
  listDaemonSockets,
} from './stub-paths.js';

/**
 * Node options of the daemon's command line, each accepted by every line from 18 to 26
 * (test/integration/node-matrix.test.ts starts the daemon with each, locally and over SSH), each
 * for a measured reason. The first two are in Node's CLI documentation; the third is V8's, which
 * Node passes on:
 * - `--expose-gc`: a model that dropped its scrollback (an idle or background terminal) frees
 *   megabytes while the daemon allocates nothing more, so V8 would never collect them
 *   (agent-stub/session/idle-gc.ts collects once, a second later, then trims the heap): 50 idle
 *   sessions that each wrote 9.7 MiB, 281 → 223 MB with the trim (bench history, Node 24);
 * - `--max-semi-space-size=1` (MiB): the daemon's output path allocates fast and keeps little, and
 *   a larger young generation mostly holds garbage in its RSS: 50 × `yes` peak 281 → 226 MB at
 *   2 MiB against V8's default; at 1 MiB against 2, 10 × `yes` growth 65.7–69.4 → 58.9–59.7 MB,
 *   peak 117–121 → 110–111 MB, with the local and SSH floods and the typing echo within their
 *   runs' spread (bench, Node 24);
 * - `--optimize-for-size`: V8 grows its heaps less past what is live and compacts them back, in
 *   both threads (the model worker holds every session's screen): 50 × `yes` (45 in the
 *   background) stub peak 201–231 → 179–183 MB and growth 140–169 → 117–121 MB, 10 × `yes`
 *   growth 64–71 → 59–62 MB, the history scenario's 50 × `yes` peak 189–233 → 178–181 MB (bench,
 *   alternated runs, Node 24). Its cost is CPU: a local `cat` flood takes 25.3–25.5 ms of the
 *   machine's CPU per MB against 23.4–24.7 (three alternated 6-round runs each), a flood the model
 *   must parse in full (a colour change before every character) 10–15 % more of the daemon's;
 *   throughput (the floods' ratios), the typing echo and the history flood within their runs'
 *   spread.
 */
export const DAEMON_NODE_OPTIONS: readonly string[] = [
  '--expose-gc',
  '--max-semi-space-size=1',
  '--optimize-for-size',
];

/** How long a freshly started daemon may take to accept connections. */
const START_TIMEOUT_MS = 10_000;
const POLL_MS = 50;

/**
 * Connects to the user's daemon, starting it detached (own session, stdio to its log file) when
 * none answers. Used by `stub.js connect` and by the local provider. The runtime dir must be
 * private (DIR_INSECURE otherwise): a socket there that another user could have put in place
 * is never spoken to.
 *
 * The daemon is started by whichever node the host has (18 to 26), so its command line carries
 * only {@link DAEMON_NODE_OPTIONS}.
 *
 * @throws PtyRelayError DAEMON_START_FAILED as soon as the started process exits without serving
 *   (its stderr, the node and its version in `details`), or when nothing answers within
 *   {@link START_TIMEOUT_MS}.
 */
export async function connectOrStartDaemon(
  stubFile: string,
  runtimeDir: string,
  extraArgs: string[] = [],
  nodePath = process.execPath,
): Promise<Socket> {
  const buildId = bundleBuildId(stubFile);
  const socketPath = daemonSocketPath(runtimeDir, buildId);
  mkdirSync(runtimeDir, { recursive: true, mode: 0o700 });
  assertPrivateRuntime(runtimeDir, socketPath);
  const first = await tryConnect(socketPath);
  if (first) return first;
  const logPath = daemonLogPath(runtimeDir);
  const logFd = openSync(logPath, 'a', 0o600);
  const logStart = fstatSync(logFd).size;
  const child = spawn(
    nodePath,
    [...DAEMON_NODE_OPTIONS, stubFile, 'daemon', '--runtime-dir', runtimeDir, ...extraArgs],
    {
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env: daemonProcessEnv(process.env),
    },
  );
  child.unref();
  closeSync(logFd); // the child has its own copy
  const failed = new Promise<StartFailure>((resolve) => {
    child.once('error', (err) => resolve({ spawnError: err.message }));
    // An exit with 0 is a daemon that found another one serving: that one answers below.
    child.once('exit', (code, signal) => {
      if (code !== 0) resolve({ code, signal });
    });
  });
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const failure = await Promise.race([failed, sleep(POLL_MS)]);
    const s = await tryConnect(socketPath);
    if (s) {
      try {
        endUnlessServing(child, daemonLockPath(runtimeDir, buildId));
      } catch (err) {
        s.destroy();
        throw err;
      }
      return s;
    }
    if (failure) throw startFailed(nodePath, logPath, logStart, failure);
  }
  // Given up on: a daemon that came up later would serve nobody until its idle exit.
  child.kill('SIGTERM');
  throw startFailed(nodePath, logPath, logStart, { timedOut: true });
}

/** How a started daemon failed to serve. */
interface StartFailure {
  code?: number | null;
  signal?: NodeJS.Signals | null;
  spawnError?: string;
  timedOut?: boolean;
}

/** Most of a daemon's stderr kept in the error (its first lines say why). */
const STDERR_KEEP_BYTES = 4096;

/**
 * The typed error of a daemon that did not start: its own stderr (what it wrote to the log since
 * this launcher opened it), the first line of it in the message, and the node that ran it.
 */
function startFailed(nodePath: string, logPath: string, logStart: number, f: StartFailure): PtyRelayError {
  const stderr = readFrom(logPath, logStart, STDERR_KEEP_BYTES);
  const firstLine = stderr
    .split('\n')
    .find((l) => l.trim() !== '')
    ?.trim();
  const nodeVersion = versionOf(nodePath);
  const how = f.timedOut
    ? `nothing answered within ${START_TIMEOUT_MS} ms`
    : f.spawnError
      ? `it could not be run (${f.spawnError})`
      : f.signal
        ? `it was killed by ${f.signal}`
        : `it exited with status ${f.code}`;
  return new PtyRelayError(
    'DAEMON_START_FAILED',
    `the stub daemon did not start: ${how}${firstLine ? `: ${firstLine}` : ''} (node ${nodeVersion} at ${nodePath})`,
    {
      stderr,
      node: nodePath,
      nodeVersion,
      log: logPath,
      ...(f.timedOut ? { timedOut: true } : { exitCode: f.code ?? null, signal: f.signal ?? null }),
    },
  );
}

/** Up to `max` bytes of `path` from `offset` (what a process wrote since), as text. */
function readFrom(path: string, offset: number, max: number): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buf = Buffer.alloc(max);
    const n = readSync(fd, buf, 0, max, offset);
    return buf.subarray(0, n).toString('utf8');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** `node --version` of the binary at `nodePath` ('unknown' when it does not say). */
function versionOf(nodePath: string): string {
  if (nodePath === process.execPath) return process.version;
  try {
    return (
      execFileSync(nodePath, ['--version'], {
        encoding: 'utf8',
        timeout: 2000,
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim() || 'unknown'
    );
  } catch {
    return 'unknown';
  }
}

const sleep = (ms: number): Promise<undefined> => new Promise((r) => setTimeout(() => r(undefined), ms));

/**
 * Ends the daemon this launcher started when another one answered (a concurrent starter's won).
 * Still booting, ours would lose the lock and exit, but only while the winner lives: once that one
 * stops, ours would take over the runtime dir and idle for its whole idle timeout with nobody
 * connected (and recreate a runtime dir that was removed meanwhile). The lock file names the
 * daemon that serves the socket (its pid first).
 */
function endUnlessServing(child: ChildProcess, lockPath: string): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  let holder: number;
  try {
    holder = Number.parseInt(readFileSync(lockPath, 'utf8'), 10);
  } catch (err) {
    // No lock: the daemon that answered has just exited; ours must not take its place either.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    holder = Number.NaN;
  }
  if (holder !== child.pid) child.kill('SIGTERM');
}

/** Sockets of live daemons of other builds in the runtime dir (they still serve their sessions). */
export async function liveLegacyDaemons(
  runtimeDir: string,
  ownBuildId: string,
): Promise<{ buildId: string; socketPath: string }[]> {
  const others = listDaemonSockets(runtimeDir).filter((d) => d.buildId !== ownBuildId);
  const alive = await Promise.all(
    others.map(async (d) => ((await socketAnswers(d.socketPath)) ? d : undefined)),
  );
  return alive.filter((d): d is { buildId: string; socketPath: string } => d !== undefined);
}

/** Connects to one daemon socket (no starting); its dir and the socket must be private. */
export async function connectDaemonSocket(socketPath: string): Promise<Socket> {
  assertPrivateRuntime(dirname(socketPath), socketPath);
  const s = await tryConnect(socketPath);
  if (!s) throw new Error(`no daemon answers at ${socketPath}`);
  return s;
}
