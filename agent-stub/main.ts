import { isMainThread, workerData } from 'node:worker_threads';
import { connectOrStartDaemon } from '../provider/daemon-launcher.js';
import { daemonSocketPath, defaultRuntimeDir } from '../provider/stub-paths.js';
import { runDaemon } from './daemon/daemon-server.js';
import { MODEL_WORKER_MARKER } from './session/model-protocol.js';
import { runModelWorker } from './session/model-worker.js';

/**
 * Entry of the bundled stub (`stub.cjs`):
 *   node stub.cjs daemon [--runtime-dir D] [--idle-exit-ms N] [--ring-bytes N]
 *   node stub.cjs ensure [--runtime-dir D]    (starts the daemon if needed, prints its socket path)
 *   node stub.cjs connect [--runtime-dir D]   (bridges stdio to the daemon, starting it if needed)
 * The same file runs the screen-model worker thread.
 */
function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
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

async function main(argv: string[]): Promise<void> {
  const [cmd, ...args] = argv;
  const runtimeDir = flag(args, '--runtime-dir') ?? defaultRuntimeDir();
  if (cmd === 'daemon') {
    await runDaemon({
      runtimeDir,
      idleExitMs: numFlag(args, '--idle-exit-ms'),
      ringBytes: numFlag(args, '--ring-bytes'),
      scrollbackRows: numFlag(args, '--scrollback-rows'),
      creditWindow: numFlag(args, '--credit-window'),
      keepTailMin: numFlag(args, '--keep-tail'),
      pendingCap: numFlag(args, '--pending-cap'),
    });
    return;
  }
  if (cmd === 'ensure') {
    // Start the daemon if needed and say where its socket is (the relay then forwards to it).
    const i = args.indexOf('--runtime-dir');
    const daemonArgs = i >= 0 ? [...args.slice(0, i), ...args.slice(i + 2)] : args;
    const socket = await connectOrStartDaemon(process.argv[1], runtimeDir, daemonArgs);
    socket.destroy();
    process.stdout.write(`${JSON.stringify({ socketPath: daemonSocketPath(runtimeDir), runtimeDir })}\n`);
    return;
  }
  if (cmd === 'connect') {
    const i = args.indexOf('--runtime-dir');
    const daemonArgs = i >= 0 ? [...args.slice(0, i), ...args.slice(i + 2)] : args;
    const socket = await connectOrStartDaemon(process.argv[1], runtimeDir, daemonArgs);
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
} else if (isMainThread) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`ptyrelay stub: ${err?.stack ?? err}\n`);
    process.exit(1);
  });
}
