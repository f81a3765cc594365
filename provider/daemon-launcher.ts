import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { daemonProcessEnv } from './daemon-allocator.js';
import { assertPrivateRuntime } from './private-dir.js';
import {
  bundleBuildId,
  daemonLockPath,
  daemonLogPath,
  daemonSocketPath,
  listDaemonSockets,
} from './stub-paths.js';
import { INTERACTIVE_TIER_UP_FLAG } from './v8-tier-up.js';

/** How long a freshly started daemon may take to accept connections. */
const START_TIMEOUT_MS = 10_000;
const POLL_MS = 50;

/** A connected socket, or undefined when nothing answers at `path`. */
export function tryConnect(path: string): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', () => resolve(undefined));
  });
}

/** True when a daemon answers at `path`. */
export async function socketAnswers(path: string): Promise<boolean> {
  const s = await tryConnect(path);
  s?.destroy();
  return s !== undefined;
}

/**
 * TurboFan inlines callees into a function it optimizes until their bytecode adds up to this
 * (V8's default: 920 bytes). Each optimization of the daemon is one job on its one V8 thread
 * (`--v8-pool-size=1`). A thread of the next keystroke (sshd, the tty's kworker, `cat`, the
 * daemon's own main thread) that wakes on that core while a job runs, and that the kernel does not
 * let preempt it (one not due), waits for the job's end (docs/benchmarks.md "Issue 17, ninth
 * round"). With a quarter of the budget the jobs are shorter (`--trace-opt` over a typing run:
 * p90 3.5 against 5.2 ms), and fewer echoes 2 ms apart took over 2.5 ms: median 6 against 8 of
 * 500 over eleven alternated runs each (2 ms p99 median 2.53 against 3.10 ms); flood unchanged.
 */
export const DAEMON_INLINING_FLAG = '--max-inlined-bytecode-size-cumulative=240';

/**
 * V8 flags of the daemon process (both isolates: the main thread and the model worker).
 * - `--max-semi-space-size=2`: the data path allocates fast and keeps little (the rings are
 *   long-lived, everything else dies young): V8's default young generation (up to 3 × 16 MB)
 *   would mostly hold garbage in the daemon's RSS.
 * - `--optimize-for-size`: V8 lets the old generation grow to a multiple of what is live before
 *   it collects; under 45 flooding background sessions the model worker's old space reached
 *   60 MB with 20 MB live. With the flag V8 grows it less and compacts it back (50 × `yes`:
 *   stub RSS peak 234 → 183 MB). No cost measured to a `cat` flood or to echo latency; a
 *   flood the model must parse in full (one long line) ran ~8 % slower (docs/benchmarks.md).
 * - {@link INTERACTIVE_TIER_UP_FLAG}: the keystroke path is optimized early (v8-tier-up.ts).
 * - `--v8-pool-size=1`: one V8 background thread instead of four. The daemon's background
 *   threads are V8's optimizing compiler (~90 % of their time while typing) and its concurrent
 *   GC. With four, two compile jobs of 2–14 ms each could hold both cores of a 2-core host at
 *   once, and the next keystroke's hops (sshd, the daemon, the tty's kworker, `cat`) queued
 *   behind them: during the bench's 2 ms bursts those threads had 30–37 % of both cores' time
 *   while an echo took over 4 ms (scheduler trace, docs/benchmarks.md "Issue 17, fifth round"). With
 *   one they hold at most one core, and compile less in total: 1.9–2.4 s of compile per typing run
 *   against 3.4–5.1 s. The daemon's heaps are small (2 MB semi-spaces), so GC loses nothing it
 *   would notice; flood and memory targets unchanged (0.80× of `ssh -tt`, 178 MB for 50 × `yes`).
 * - {@link DAEMON_INLINING_FLAG}: shorter compile jobs, so that one thread is off a core sooner.
 */
const DAEMON_NODE_FLAGS = [
  '--max-semi-space-size=2',
  '--optimize-for-size',
  INTERACTIVE_TIER_UP_FLAG,
  '--v8-pool-size=1',
  DAEMON_INLINING_FLAG,
];

/**
 * Connects to the user's daemon, starting it detached (own session, stdio to its log file) when
 * none answers. Used by `stub.js connect` and by the local provider. The runtime dir must be
 * private (DIR_INSECURE otherwise): a socket there that another user could have put in place
 * is never spoken to.
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
  const logFd = openSync(daemonLogPath(runtimeDir), 'a', 0o600);
  const child = spawn(
    nodePath,
    [...DAEMON_NODE_FLAGS, stubFile, 'daemon', '--runtime-dir', runtimeDir, ...extraArgs],
    {
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env: daemonProcessEnv(process.env),
    },
  );
  child.unref();
  closeSync(logFd); // the child has its own copy
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, POLL_MS));
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
  }
  // Given up on: a daemon that came up later would serve nobody until its idle exit.
  child.kill('SIGTERM');
  throw new Error(`daemon did not start within ${START_TIMEOUT_MS} ms (log: ${daemonLogPath(runtimeDir)})`);
}

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
