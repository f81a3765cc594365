import { isMainThread } from 'node:worker_threads';
import { restoreUserMallocEnv } from '../provider/daemon-runtime/daemon-allocator.js';
import {
  defaultRuntimeDir,
  defaultStateDir,
  STUB_LIBRARY_ENV,
} from '../provider/daemon-runtime/stub-paths.js';
import { isPtyRelayError } from '../provider/errors.js';
import type { EnsureReport } from './launcher-commands.js';
import { parseStubFlags, type StubFlags } from './stub-flags.js';

/**
 * Entry of the bundled stub (`stub.cjs`):
 *   node stub.cjs daemon [--runtime-dir D] [--state-dir D] [--idle-exit-ms N] [--ring-bytes N] …
 *   node stub.cjs ensure [--runtime-dir D]    (starts the daemon if needed, prints its socket path)
 *   node stub.cjs connect [--runtime-dir D] [--socket S] [--start-marker M]
 *       (bridges stdio to the daemon, starting it if needed; prints `M\n` first once connected)
 * `--state-dir D` (any command) sets the persistent state dir (PTYRELAY_STATE_DIR) for the daemon.
 * `ensure` and `connect` pass the daemon's flags on to a daemon they start. Every flag is checked
 * first (stub-flags.ts): a bad one ends `daemon` and `connect` with its message and exit code 2,
 * and `ensure` with its CONFIG_INVALID report.
 * The screen-model worker runs its own bundle, which this file carries as source.
 * Each command loads only its own code (dynamic imports, which the bundle runs on first use): a
 * daemon never loads the launcher, nor a `connect` bridge the daemon.
 */

export type { EnsureReport };

/**
 * Starts the daemon of the stub at `stubFile` if none answers, and reports its socket and those
 * of older builds still running. `args` are `ensure`'s (`--runtime-dir D`, daemon flags). The
 * relay's first-contact helper calls this in its own node process (see {@link STUB_LIBRARY_ENV}).
 */
export async function ensureDaemon(stubFile: string, args: string[]): Promise<EnsureReport> {
  const launcher = await import('./launcher-commands.js');
  return launcher.ensureDaemon(stubFile, args);
}

/** The command's flags, or its end: the message on stderr and exit code 2. */
function flagsOrExit(args: string[]): StubFlags {
  try {
    return parseStubFlags(args);
  } catch (err) {
    if (!isPtyRelayError(err)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...args] = argv;
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
  if (cmd !== 'daemon' && cmd !== 'connect') {
    process.stderr.write('usage: stub.cjs daemon|ensure|connect [--runtime-dir DIR]\n');
    process.exit(2);
  }
  const flags = flagsOrExit(args);
  const stateDir = flags['--state-dir'];
  if (stateDir) process.env.PTYRELAY_STATE_DIR = stateDir;
  const runtimeDir = flags['--runtime-dir'] ?? defaultRuntimeDir();
  if (cmd === 'daemon') {
    restoreUserMallocEnv();
    const { runDaemon } = await import('./daemon/daemon-server.js');
    await runDaemon({
      runtimeDir,
      stateDir: stateDir ?? defaultStateDir(),
      idleExitMs: flags['--idle-exit-ms'],
      ringBytes: flags['--ring-bytes'],
      backgroundRingBytes: flags['--background-ring-bytes'],
      scrollbackRows: flags['--scrollback-rows'],
      scrollbackIdleMs: flags['--scrollback-idle-ms'],
      creditWindow: flags['--credit-window'],
      creditWindowMax: flags['--credit-window-max'],
      keepTailMin: flags['--keep-tail'],
      pendingCap: flags['--pending-cap'],
      ...(flags['--palette'] ? { palette: flags['--palette'] } : {}),
      readiness: {
        pollIntervalMs: flags['--agent-poll-ms'],
        promptGraceMs: flags['--agent-prompt-grace-ms'],
        inferredIdleMs: flags['--agent-idle-ms'],
        maxReadBytes: flags['--max-read-bytes'],
      },
      history: {
        enabled: flags['--history'],
        segmentBytes: flags['--history-segment-bytes'],
        sessionBytes: flags['--history-session-bytes'],
        hostBytes: flags['--history-host-bytes'],
        freePercent: flags['--history-free-percent'],
        tailBytes: flags['--tail-bytes'],
      },
    });
    return;
  }
  await (await import('./launcher-commands.js')).bridgeToDaemon(process.argv[1], args, flags, runtimeDir);
}

if (isMainThread && !process.env[STUB_LIBRARY_ENV]) {
  main(process.argv.slice(2)).catch((err) => {
    // A typed refusal (an insecure runtime dir) says what to do; anything else keeps its stack.
    const text = isPtyRelayError(err) ? `${err.code}: ${err.message}` : (err?.stack ?? err);
    process.stderr.write(`ptyrelay stub: ${text}\n`);
    process.exit(1);
  });
}
