import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * Nice value of a process's threads other than its main one (V8's compiler and GC workers,
 * libuv's pool, worker threads such as the daemon's screen models).
 *
 * The main thread carries every keystroke and echo; the others do work that can wait a few
 * milliseconds. At equal priority the kernel lets a background thread that just woke preempt the
 * main thread on its own core: a perf trace of the typing bench caught the daemon's V8 worker,
 * woken by its main thread, taking that core for 3.4 ms while the main thread, runnable, waited
 * behind it and the other core sat idle (docs/benchmarks.md, "Issue 17, seventh round"). A
 * thread with a lower priority does not preempt; it waits for the core to free up or runs on
 * the idle one. At 10 it still gets a tenth of a main thread's share on a saturated machine,
 * so a flood's screen model keeps up.
 */
export const BACKGROUND_NICE = 10;
/** Threads start at their creator's priority; later ones (libuv's pool, a new model worker) are lowered by the next sweep. */
export const BACKGROUND_SWEEP_MS = 1000;

export interface SweepResult {
  /** Threads whose priority was lowered by this sweep. */
  lowered: number;
  /** Threads that could not be lowered (refused), with the first reason. */
  failed: number;
  problem?: string;
}

/**
 * Lowers every thread of this process but the main one to `nice` (Linux: a thread id is a
 * valid target of setpriority). Anywhere without /proc/self/task it does nothing.
 */
export function lowerBackgroundThreads(nice = BACKGROUND_NICE, pid = process.pid): SweepResult {
  const result: SweepResult = { lowered: 0, failed: 0 };
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch (err) {
    result.problem = `no thread list: ${(err as Error).message}`;
    return result;
  }
  for (const t of tids) {
    const tid = Number(t);
    if (!Number.isInteger(tid) || tid === pid) continue;
    try {
      if (getPriority(tid) >= nice) continue;
      setPriority(tid, nice);
      result.lowered++;
    } catch (err) {
      // A thread that ended between the listing and here is no loss.
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') continue;
      result.failed++;
      result.problem ??= `thread ${tid}: ${(err as Error).message}`;
    }
  }
  return result;
}

/**
 * Keeps this process's background threads at {@link BACKGROUND_NICE}: a sweep now and every
 * {@link BACKGROUND_SWEEP_MS} (an unreferenced timer; it never keeps the process alive).
 * `onProblem` hears of the first failed sweep only. Returns a stop function.
 */
export function keepBackgroundThreadsLow(onProblem?: (problem: string) => void): () => void {
  let told = false;
  const sweep = () => {
    const r = lowerBackgroundThreads();
    if (r.problem && !told) {
      told = true;
      onProblem?.(r.problem);
    }
  };
  sweep();
  const timer = setInterval(sweep, BACKGROUND_SWEEP_MS);
  timer.unref();
  return () => clearInterval(timer);
}
