/**
 * The PTY's process, as PtySession drives it: spawning it through node-pty, signal names and
 * numbers (a signal goes to the foreground process group, as Ctrl-C would), shutdown (SIGHUP to
 * the process and its descendants, SIGKILL after a deadline), and the workaround that keeps a
 * program's last output when node-pty would lose it at exit (see keepOutputOnExit). Nothing here
 * knows about seqs, sinks or the model.
 */
import { readSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import * as pty from 'node-pty';
import type { PtyExitInfo, ShutdownOptions } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { PtyInternals } from '../adapters/node-pty.js';
import type { ProducerGate } from '../flow/producer-gate.js';
import { descendantPids, foregroundGroup, readProcStat } from './proc-info.js';
import type { SessionLaunch } from './session-launch.js';

const DEFAULT_SHUTDOWN_DEADLINE_MS = 2000;
/** After the child exited, the PTY gets this long to end by itself (EIO) before it is destroyed; on Linux it always does, so this only guards against a stuck descriptor. */
const EXIT_DRAIN_GRACE_MS = 30_000;
/** Reads of the final drain: 64 × 64 KiB is far more than any PTY buffers. */
const DRAIN_READ_BYTES = 64 * 1024;
const DRAIN_MAX_READS = 64;

const SIGNAL_NAMES = new Map<number, string>(
  Object.entries(osConstants.signals).map(([name, num]) => [num as number, name]),
);

export function signalNumber(name: string): number {
  const n = (osConstants.signals as Record<string, number>)[name];
  if (n === undefined) throw new PtyRelayError('INVALID_ARGUMENT', `unknown signal ${JSON.stringify(name)}`);
  return n;
}

/** The exit node-pty reported, with a signal's name (and 128 + its number when no code). */
export function exitInfo(exitCode: number, signal?: number): PtyExitInfo {
  const sigName = signal ? SIGNAL_NAMES.get(signal) : undefined;
  return sigName ? { exitCode: exitCode || 128 + (signal ?? 0), signal: sigName } : { exitCode };
}

/** Starts the launch's program on a new PTY (output as Buffers: `encoding: null`). */
export function spawnPty(launch: SessionLaunch): pty.IPty {
  return pty.spawn(launch.file, launch.args, {
    name: launch.env.TERM ?? 'xterm-256color',
    cols: launch.cols,
    rows: launch.rows,
    cwd: launch.cwd,
    env: launch.env,
    encoding: null,
  } as pty.IPtyForkOptions);
}

/**
 * Signal the foreground process group of `pid` (what Ctrl-C would reach), else `pid` itself.
 * Returns the processes it went to (signal-delivery.ts waits for them to take it).
 */
export function signalForeground(pid: number, num: number): number[] {
  const pgid = foregroundGroup(pid) ?? pid;
  try {
    process.kill(-pgid, num);
  } catch {
    process.kill(pid, num);
    return [pid];
  }
  return [pid, ...descendantPids(pid)].filter((p) => readProcStat(p)?.pgrp === pgid);
}

/** SIGHUP the process groups, SIGKILL whatever is left after the deadline; resolves after `exited`. */
export async function shutdownProcess(
  pid: number,
  exited: Promise<void>,
  opts: ShutdownOptions,
): Promise<void> {
  const doomed = [pid, ...descendantPids(pid)];
  const killAll = (sig: NodeJS.Signals) => {
    for (const p of doomed) {
      try {
        process.kill(p, sig);
      } catch {
        // already gone
      }
    }
  };
  if (opts.immediate) killAll('SIGKILL');
  else {
    killAll('SIGHUP');
    const deadline = opts.deadlineMs ?? DEFAULT_SHUTDOWN_DEADLINE_MS;
    const timer = setTimeout(() => killAll('SIGKILL'), deadline);
    await Promise.race([exited, new Promise((r) => setTimeout(r, deadline))]);
    clearTimeout(timer);
  }
  killAll('SIGKILL');
  await exited;
}

/**
 * Two ways node-pty loses a program's last output, both handled here:
 * - it destroys the PTY socket 200 ms after the child exits if it has not closed by then (a
 *   macOS workaround, unixTerminal.js onexit) — while we hold the PTY paused for flow control,
 *   or are just behind, that throws unread output away. Such a destroy resumes reading instead
 *   and destroys only if the socket has not ended by itself after a grace period;
 * - after the child exits, libuv sometimes reports end-of-file on the master while the kernel
 *   still holds output (seen under load with a paused PTY). Before any destroy we read the
 *   descriptor dry ourselves (non-blocking: it stops at EAGAIN/EIO, bounded by the kernel buffer).
 * What the drain reads goes to `output`, as the PTY's own output would.
 */
export function keepOutputOnExit(
  internals: PtyInternals | undefined,
  gate: ProducerGate,
  output: (chunk: Buffer) => void,
): void {
  if (!internals) return; // node-pty of another shape (adapters/node-pty.ts): its own behaviour
  const { socket, fd } = internals;
  const destroy = socket.destroy.bind(socket);
  socket.destroy = (err?: Error) => {
    if (socket.destroyed) return destroy(err);
    if (socket.errored || socket.readableEnded || err) {
      drainFd(fd, output);
      return destroy(err);
    }
    gate.openForGood();
    setTimeout(() => {
      if (socket.destroyed) return;
      drainFd(fd, output);
      destroy();
    }, EXIT_DRAIN_GRACE_MS).unref();
  };
}

/** Reads what the kernel still holds for the PTY master, synchronously, and delivers it. */
function drainFd(fd: number, output: (chunk: Buffer) => void): void {
  const buf = Buffer.allocUnsafe(DRAIN_READ_BYTES);
  for (let i = 0; i < DRAIN_MAX_READS; i++) {
    let n = 0;
    try {
      n = readSync(fd, buf, 0, buf.length, null);
    } catch {
      return; // EAGAIN (empty), EIO (slave gone and empty), EBADF (already closed)
    }
    if (n <= 0) return;
    output(Buffer.from(buf.subarray(0, n)));
  }
}
