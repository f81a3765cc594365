import { cmdline, descendants, procReadCalls, threadCpuMs } from './util.js';

/**
 * What the thread that reads a flood's PTY cost, per MB delivered: its CPU (user and kernel) and
 * its process's read calls. A Linux PTY hands a reader at most 4 KiB per read while the writer
 * waits, so this thread pays a wakeup, a read and its own work for every 4 KiB; in a flood it is
 * the step the others wait for.
 */
export interface ReaderCost {
  /** Whose main thread: `daemon` (ptyrelay's), `bench` (node-pty read here), `forwarder` (the floor). */
  thread: string;
  cpuMsPerMb: number;
  readsPerMb: number;
}

interface Sample {
  cpuMs: number;
  reads: number;
}

/** How often a watched child is sampled (two small /proc reads). */
const POLL_MS = 50;

function sample(pid: number): Sample | undefined {
  const cpuMs = threadCpuMs(pid);
  const reads = procReadCalls(pid);
  return cpuMs === undefined || reads === undefined ? undefined : { cpuMs, reads };
}

function cost(thread: string, a: Sample, b: Sample, bytes: number): ReaderCost | undefined {
  if (bytes <= 0) return undefined;
  const mb = bytes / 1e6;
  return {
    thread,
    cpuMsPerMb: Math.round(((b.cpuMs - a.cpuMs) / mb) * 100) / 100,
    readsPerMb: Math.round(((b.reads - a.reads) / mb) * 10) / 10,
  };
}

/** Measures the main thread of a running process (`pid`) from now until `stop`. */
export function measureReader(
  thread: string,
  pid: number | undefined,
): { stop(bytes: number): ReaderCost | undefined } {
  const a = pid === undefined ? undefined : sample(pid);
  return {
    stop(bytes) {
      const b = pid === undefined ? undefined : sample(pid);
      return a && b ? cost(thread, a, b, bytes) : undefined;
    },
  };
}

/**
 * Measures a child of this process started after the call, found by a string of its command line:
 * from `started()` (its first output arrived, so its own start-up is left out) to its last sample
 * (it is polled until `stop`, since it exits when done).
 */
export function watchReader(
  thread: string,
  match: string,
): { started(): void; stop(bytes: number): ReaderCost | undefined } {
  let pid: number | undefined;
  let first: Sample | undefined;
  let last: Sample | undefined;
  const timer = setInterval(() => {
    const s = pid === undefined ? undefined : sample(pid);
    if (s) last = s;
  }, POLL_MS);
  return {
    started() {
      if (pid !== undefined) return;
      pid = descendants(process.pid).find((p) => cmdline(p).includes(match)) ?? -1;
      first = pid > 0 ? sample(pid) : undefined;
      last = first;
    },
    stop(bytes) {
      clearInterval(timer);
      return first && last ? cost(thread, first, last, bytes) : undefined;
    },
  };
}
