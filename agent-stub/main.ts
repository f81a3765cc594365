import { isMainThread, workerData } from 'node:worker_threads';
import { connectDaemonSocket, connectOrStartDaemon, liveLegacyDaemons } from '../provider/daemon-launcher.js';
import {
  bundleBuildId,
  daemonSocketPath,
  defaultRuntimeDir,
  STUB_LIBRARY_ENV,
} from '../provider/stub-paths.js';
import { runDaemon } from './daemon/daemon-server.js';
import { MODEL_WORKER_MARKER } from './session/model-protocol.js';
import { runModelWorker } from './session/model-worker.js';

/**
 * Entry of the bundled stub (`stub.cjs`):
 *   node stub.cjs daemon [--runtime-dir D] [--state-dir D] [--idle-exit-ms N] [--ring-bytes N]
 *   node stub.cjs ensure [--runtime-dir D]    (starts the daemon if needed, prints its socket path)
 *   node stub.cjs connect [--runtime-dir D]   (bridges stdio to the daemon, starting it if needed)
 * The same file runs the screen-model worker thread.
 */
function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
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
  const runtimeDir = flag(args, '--runtime-dir') ?? defaultRuntimeDir();
  const socket = await connectOrStartDaemon(
    stubFile,
    runtimeDir,
    withoutFlags(args, ['--runtime-dir', '--socket']),
  );
  socket.destroy();
  const buildId = bundleBuildId(stubFile);
  const legacy = await liveLegacyDaemons(runtimeDir, buildId);
  return { socketPath: daemonSocketPath(runtimeDir, buildId), buildId, runtimeDir, legacy };
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...args] = argv;
  const runtimeDir = flag(args, '--runtime-dir') ?? defaultRuntimeDir();
  if (cmd === 'daemon') {
    await runDaemon({
      runtimeDir,
      stateDir: flag(args, '--state-dir'),
      idleExitMs: numFlag(args, '--idle-exit-ms'),
      ringBytes: numFlag(args, '--ring-bytes'),
      backgroundRingBytes: numFlag(args, '--background-ring-bytes'),
      scrollbackRows: numFlag(args, '--scrollback-rows'),
      creditWindow: numFlag(args, '--credit-window'),
      creditWindowMax: numFlag(args, '--credit-window-max'),
      keepTailMin: numFlag(args, '--keep-tail'),
      pendingCap: numFlag(args, '--pending-cap'),
    });
    return;
  }
  const daemonArgs = withoutFlags(args, ['--runtime-dir', '--socket']);
  if (cmd === 'ensure') {
    process.stdout.write(`${JSON.stringify(await ensureDaemon(process.argv[1], args))}\n`);
    return;
  }
  if (cmd === 'connect') {
    // --socket reaches a given daemon (an older build's); otherwise this build's, started if needed.
    const target = flag(args, '--socket');
    const socket = target
      ? await connectDaemonSocket(target)
      : await connectOrStartDaemon(process.argv[1], runtimeDir, daemonArgs);
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
    process.stderr.write(`ptyrelay stub: ${err?.stack ?? err}\n`);
    process.exit(1);
  });
}
