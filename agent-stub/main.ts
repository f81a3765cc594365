import { homedir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, workerData } from 'node:worker_threads';
import { restoreUserMallocEnv } from '../provider/daemon-runtime/daemon-allocator.js';
import {
  connectDaemonSocket,
  connectOrStartDaemon,
  liveLegacyDaemons,
  socketAnswers,
} from '../provider/daemon-runtime/daemon-launcher.js';
import { checkStubDir, stubDirError } from '../provider/daemon-runtime/stub-dirs.js';
import {
  bundleBuildId,
  daemonSocketPath,
  defaultRuntimeDir,
  defaultStateDir,
  STUB_LIBRARY_ENV,
} from '../provider/daemon-runtime/stub-paths.js';
import { isPtyRelayError } from '../provider/errors.js';
import { runDaemon } from './daemon/daemon-server.js';
import { MODEL_WORKER_MARKER } from './session/model-protocol.js';
import { runModelWorker } from './session/model-worker.js';

/**
 * Entry of the bundled stub (`stub.cjs`):
 *   node stub.cjs daemon [--runtime-dir D] [--state-dir D] [--idle-exit-ms N] [--ring-bytes N]
 *   node stub.cjs ensure [--runtime-dir D]    (starts the daemon if needed, prints its socket path)
 *   node stub.cjs connect [--runtime-dir D] [--socket S] [--start-marker M]
 *       (bridges stdio to the daemon, starting it if needed; prints `M\n` first once connected)
 * `--state-dir D` (any command) sets the persistent state dir (PTYRELAY_STATE_DIR) for the daemon.
 * The same file runs the screen-model worker thread.
 */
function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

/** A dir flag's value; `~/` at its start means the home dir (the relay config passes it through). */
function dirFlag(args: string[], name: string): string | undefined {
  const v = flag(args, name);
  return v?.startsWith('~/') ? join(process.env.HOME || homedir(), v.slice(2)) : v;
}

function withoutFlags(args: string[], names: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (names.includes(args[i])) i++;
    else out.push(args[i]);
  }
  return out;
}

function numFlag(args: string[], name: string): number | undefined {
  const v = flag(args, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) {
    process.stderr.write(`${name} must be a positive number, got ${v}\n`);
    process.exit(2);
  }
  return n;
}

/** A flag that may be 0 (a duration that 0 turns off). */
function nonNegativeFlag(args: string[], name: string): number | undefined {
  const v = flag(args, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`${name} must be a non-negative integer, got ${v}\n`);
    process.exit(2);
  }
  return n;
}

/** `--history on|off` (default on). */
function historyFlag(args: string[]): boolean | undefined {
  const v = flag(args, '--history');
  if (v === undefined) return undefined;
  if (v !== 'on' && v !== 'off') {
    process.stderr.write(`--history must be on or off, got ${v}\n`);
    process.exit(2);
  }
  return v === 'on';
}

/** Free space a new daemon wants in its runtime dir: sockets, locks and the log. */
const RUNTIME_MIN_FREE_BYTES = 64 * 1024;
/** Free space a new daemon wants in its state dir: snapshots and history segments start small. */
const STATE_MIN_FREE_BYTES = 1024 * 1024;
/** Flags the stub commands use themselves (not passed on to the daemon). */
const COMMAND_FLAGS = ['--runtime-dir', '--socket', '--start-marker', '--state-dir'];

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
  const runtimeDir = dirFlag(args, '--runtime-dir') ?? defaultRuntimeDir();
  const stateDir = dirFlag(args, '--state-dir');
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
  const socket = await connectOrStartDaemon(stubFile, runtimeDir, withoutFlags(args, COMMAND_FLAGS));
  socket.destroy();
  const legacy = await liveLegacyDaemons(runtimeDir, buildId);
  return { socketPath: daemonSocketPath(runtimeDir, buildId), buildId, runtimeDir, legacy };
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...args] = argv;
  const stateDir = dirFlag(args, '--state-dir');
  if (stateDir) process.env.PTYRELAY_STATE_DIR = stateDir;
  const runtimeDir = dirFlag(args, '--runtime-dir') ?? defaultRuntimeDir();
  if (cmd === 'daemon') {
    restoreUserMallocEnv();
    await runDaemon({
      runtimeDir,
      stateDir: flag(args, '--state-dir') ?? defaultStateDir(),
      idleExitMs: numFlag(args, '--idle-exit-ms'),
      ringBytes: numFlag(args, '--ring-bytes'),
      backgroundRingBytes: numFlag(args, '--background-ring-bytes'),
      scrollbackRows: numFlag(args, '--scrollback-rows'),
      scrollbackIdleMs: nonNegativeFlag(args, '--scrollback-idle-ms'),
      creditWindow: numFlag(args, '--credit-window'),
      creditWindowMax: numFlag(args, '--credit-window-max'),
      keepTailMin: numFlag(args, '--keep-tail'),
      pendingCap: numFlag(args, '--pending-cap'),
      readiness: {
        pollIntervalMs: numFlag(args, '--agent-poll-ms'),
        promptGraceMs: numFlag(args, '--agent-prompt-grace-ms'),
        inferredIdleMs: numFlag(args, '--agent-idle-ms'),
        maxReadBytes: numFlag(args, '--max-read-bytes'),
      },
      history: {
        enabled: historyFlag(args),
        segmentBytes: numFlag(args, '--history-segment-bytes'),
        sessionBytes: numFlag(args, '--history-session-bytes'),
        hostBytes: numFlag(args, '--history-host-bytes'),
        freePercent: numFlag(args, '--history-free-percent'),
        tailBytes: numFlag(args, '--tail-bytes'),
      },
    });
    return;
  }
  const daemonArgs = withoutFlags(args, COMMAND_FLAGS);
  if (cmd === 'ensure') {
    try {
      process.stdout.write(`${JSON.stringify(await ensureDaemon(process.argv[1], args))}\n`);
    } catch (err) {
      if (!isPtyRelayError(err)) throw err;
      // The relay turns this back into the same typed error.
      const details = { message: err.message, ...err.details };
      process.stdout.write(`${JSON.stringify({ error: err.message, code: err.code, details })}\n`);
      process.exitCode = 1;
    }
    return;
  }
  if (cmd === 'connect') {
    // --socket reaches a given daemon (an older build's); otherwise this build's, started if needed.
    const target = flag(args, '--socket');
    const socket = target
      ? await connectDaemonSocket(target)
      : await connectOrStartDaemon(process.argv[1], runtimeDir, daemonArgs);
    const marker = flag(args, '--start-marker');
    // Everything before this line (a login shell's rc-file chatter) is dropped by the relay.
    if (marker) process.stdout.write(`${marker}\n`);
    process.stdin.pipe(socket);
    socket.pipe(process.stdout);
    socket.on('close', () => process.exit(0));
    process.stdin.on('end', () => socket.end());
    return;
  }
  process.stderr.write('usage: stub.cjs daemon|ensure|connect [--runtime-dir DIR]\n');
  process.exit(2);
}

if (!isMainThread && workerData?.role === MODEL_WORKER_MARKER) {
  runModelWorker();
} else if (isMainThread && !process.env[STUB_LIBRARY_ENV]) {
  main(process.argv.slice(2)).catch((err) => {
    // A typed refusal (an insecure runtime dir) says what to do; anything else keeps its stack.
    const text = isPtyRelayError(err) ? `${err.code}: ${err.message}` : (err?.stack ?? err);
    process.stderr.write(`ptyrelay stub: ${text}\n`);
    process.exit(1);
  });
}
