import type { Socket } from 'node:net';
import {
  connectDaemonSocket,
  connectOrStartDaemon,
  liveLegacyDaemons,
} from '../provider/daemon-runtime/daemon-launcher.js';
import { socketAnswers } from '../provider/daemon-runtime/socket-probe.js';
import { checkStubDir, stubDirError } from '../provider/daemon-runtime/stub-dir-check.js';
import {
  bundleBuildId,
  daemonSocketPath,
  defaultRuntimeDir,
  defaultStateDir,
} from '../provider/daemon-runtime/stub-paths.js';
import { daemonFlags, parseStubFlags, type StubFlags } from './stub-flags.js';

/**
 * The stub's commands that start or reach a daemon without being one: `ensure` (also called as a
 * library by the relay's first-contact helper) and `connect`. main.ts loads this file only for
 * them, so a daemon never loads the launcher, and a `connect` bridge, which lives as long as
 * its link, never loads the daemon (nor node-pty): 62.1 → 58.5 MB of RSS per bridge (Node 24).
 */

/** Free space a new daemon wants in its runtime dir: sockets, locks and the log. */
const RUNTIME_MIN_FREE_BYTES = 64 * 1024;
/** Free space a new daemon wants in its state dir: snapshots and history segments start small. */
const STATE_MIN_FREE_BYTES = 1024 * 1024;

/** What `ensure` reports. */
export interface EnsureReport {
  socketPath: string;
  buildId: string;
  runtimeDir: string;
  /** Live daemons of older builds (they keep serving their sessions). */
  legacy: { buildId: string; socketPath: string }[];
}

/**
 * Starts the daemon of the stub at `stubFile` if none answers, and reports its socket and those
 * of older builds still running. `args` are `ensure`'s (`--runtime-dir D`, daemon flags). The
 * relay's first-contact helper calls this in its own node process (see {@link STUB_LIBRARY_ENV}).
 */
export async function ensureDaemon(stubFile: string, args: string[]): Promise<EnsureReport> {
  const flags = parseStubFlags(args);
  const runtimeDir = flags['--runtime-dir'] ?? defaultRuntimeDir();
  const stateDir = flags['--state-dir'];
  if (stateDir) process.env.PTYRELAY_STATE_DIR = stateDir; // the daemon started below inherits it
  const buildId = bundleBuildId(stubFile);
  // A daemon about to start needs its dirs; a running one is left alone even if they filled up.
  if (!(await socketAnswers(daemonSocketPath(runtimeDir, buildId)))) {
    const dirs = [
      ['runtime', runtimeDir, RUNTIME_MIN_FREE_BYTES],
      ['state', defaultStateDir(), STATE_MIN_FREE_BYTES],
    ] as const;
    for (const [kind, dir, need] of dirs) {
      const problem = checkStubDir(dir, need, false);
      if (problem) throw stubDirError(kind, dir, problem);
    }
  }
  const socket = await connectOrStartDaemon(stubFile, runtimeDir, daemonFlags(args));
  socket.destroy();
  const legacy = await liveLegacyDaemons(runtimeDir, buildId);
  return { socketPath: daemonSocketPath(runtimeDir, buildId), buildId, runtimeDir, legacy };
}

/**
 * `connect`: bridges stdio to the daemon. `--socket` reaches a given daemon (an older build's);
 * otherwise this build's, started if needed. `stubFile` is the bundle a daemon is started from.
 */
export async function bridgeToDaemon(
  stubFile: string,
  args: string[],
  flags: StubFlags,
  runtimeDir: string,
): Promise<void> {
  const target = flags['--socket'];
  const socket: Socket = target
    ? await connectDaemonSocket(target)
    : await connectOrStartDaemon(stubFile, runtimeDir, daemonFlags(args));
  const marker = flags['--start-marker'];
  // Everything before this line (a login shell's rc-file chatter) is dropped by the relay.
  if (marker) process.stdout.write(`${marker}\n`);
  process.stdin.pipe(socket);
  socket.pipe(process.stdout);
  socket.on('close', () => process.exit(0));
  process.stdin.on('end', () => socket.end());
}
