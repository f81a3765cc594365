import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { join } from 'node:path';
import { loadNativeAddon } from './native-addon.js';

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
/**
 * Time slice the background threads ask the kernel for (Linux 6.12+; the largest it accepts).
 *
 * A nice value counts only inside the thread's scheduling group, and with CONFIG_SCHED_AUTOGROUP
 * (most desktop and many server kernels) every session is one: the daemon's, the relay's, sshd's,
 * each shell's. A V8 compile in the daemon therefore competes with `sshd` or the relay as a whole
 * process at full weight, and EEVDF lets the running one finish its slice (RUN_TO_PARITY) before a
 * thread that woke gets the core: traces of the bench caught sshd, the relay's main thread and
 * `cat` waiting 1.3–4.4 ms behind another process's compile thread while the other core was idle.
 * A slice, unlike nice, counts across groups: a waking thread with a shorter slice than the
 * running one may end its protection at once (PREEMPT_SHORT), and a group asks for the shortest
 * slice among its runnable threads. So a background thread with a long slice gives way to any
 * ordinary thread that wakes, in any process, and keeps its share of the CPU (its weight is
 * unchanged). 2 ms bursts: echo p99 3.51–4.03 ms against 4.33–5.70 ms without (docs/benchmarks.md,
 * "Issue 17, eighth round").
 */
export const BACKGROUND_SLICE_NS = 100_000_000;
/** Threads start at their creator's priority; later ones (libuv's pool, a new model worker) are lowered by the next sweep. */
export const BACKGROUND_SWEEP_MS = 1000;

/** The optional `native/sched-slice.node` addon (agent-stub/native/sched-slice.c). */
export interface SliceAddon {
  /** 0, or the errno of the refusal. */
  setSlice(tid: number, ns: number): number;
}

/** Where the addon sits: `native/` beside the stub bundle (`stubDir` is the bundle's directory). */
export function sliceAddonPath(stubDir: string): string {
  return join(stubDir, 'native', 'sched-slice.node');
}

/** Loads the addon; `problem` says why there is none (absent, or failed to load). */
export function loadSliceAddon(path: string | undefined): { addon?: SliceAddon; problem?: string } {
  return loadNativeAddon<SliceAddon>(path, ['setSlice'], `no sched-slice addon${path ? ` at ${path}` : ''}`);
}

/** errno of a thread that has ended. */
const ESRCH = 3;

export interface SweepResult {
  /** Threads whose priority was lowered by this sweep. */
  lowered: number;
  /** Threads given the long slice by this sweep. */
  sliced: number;
  /** Threads that could not be lowered or sliced (refused), with the first reason. */
  failed: number;
  problem?: string;
}

export interface SweepOptions {
  nice?: number;
  pid?: number;
  /** Gives each background thread {@link BACKGROUND_SLICE_NS} once. */
  slice?: { addon: SliceAddon; done: Set<number> };
}

/**
 * Lowers every thread of this process but the main one to `nice` (Linux: a thread id is a
 * valid target of setpriority) and, with the addon, asks for a long slice for each thread not in
 * `slice.done` (which then holds exactly the live threads that have it). Anywhere without
 * /proc/self/task it does nothing.
 */
export function lowerBackgroundThreads(opts: SweepOptions = {}): SweepResult {
  const { nice = BACKGROUND_NICE, pid = process.pid, slice } = opts;
  const result: SweepResult = { lowered: 0, sliced: 0, failed: 0 };
  let tids: number[];
  try {
    tids = readdirSync(`/proc/${pid}/task`).map(Number);
  } catch (err) {
    result.problem = `no thread list: ${(err as Error).message}`;
    return result;
  }
  const fail = (tid: number, why: string) => {
    result.failed++;
    result.problem ??= `thread ${tid}: ${why}`;
  };
  for (const tid of tids) {
    if (!Number.isInteger(tid) || tid === pid) continue;
    try {
      if (getPriority(tid) < nice) {
        setPriority(tid, nice);
        result.lowered++;
      }
    } catch (err) {
      // A thread that ended between the listing and here is no loss.
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') continue;
      fail(tid, (err as Error).message);
    }
    if (slice && !slice.done.has(tid)) {
      const errno = slice.addon.setSlice(tid, BACKGROUND_SLICE_NS);
      if (errno === 0) {
        slice.done.add(tid);
        result.sliced++;
      } else if (errno !== ESRCH) fail(tid, `no long slice (errno ${errno})`);
    }
  }
  if (slice) {
    const live = new Set(tids);
    for (const tid of slice.done) if (!live.has(tid)) slice.done.delete(tid);
  }
  return result;
}

/** The thread ids of `/proc/self/task` as one string, or undefined where it cannot be read. */
function threadList(): string | undefined {
  try {
    return readdirSync('/proc/self/task').join(',');
  } catch {
    return undefined; // the sweep itself reports why
  }
}

/**
 * A sweep of this process's threads ({@link lowerBackgroundThreads}) that does nothing, and
 * returns undefined, while the process has the same threads as after its last clean sweep.
 *
 * The thread list changes rarely (a worker starts or ends); a full sweep every second made the
 * sweep itself hot enough for V8 to optimize it with the keystroke path's early tier-up
 * (v8-tier-up.ts): a 7.3 ms TurboFan compile on a compiler thread a minute into typing, then a
 * deoptimization and another compile later (`--trace-opt --trace-deopt` of the typing bench,
 * docs/benchmarks.md, "Issue 17, sixteenth round"). The check that runs instead is one directory
 * read.
 */
export function createThreadSweep(slice?: SweepOptions['slice']): () => SweepResult | undefined {
  let clean: string | undefined;
  return () => {
    const list = threadList();
    if (list !== undefined && list === clean) return undefined;
    const r = lowerBackgroundThreads({ slice });
    clean = r.failed === 0 && !r.problem ? list : undefined;
    return r;
  };
}

/**
 * Keeps this process's background threads at {@link BACKGROUND_NICE} and, when the addon at
 * `sliceAddon` loads, at {@link BACKGROUND_SLICE_NS}: a sweep now and every
 * {@link BACKGROUND_SWEEP_MS} (an unreferenced timer; it never keeps the process alive).
 * `onProblem` hears of the missing addon and of the first failed sweep only. Returns a stop function.
 */
export function keepBackgroundThreadsLow(
  onProblem?: (problem: string) => void,
  sliceAddon?: string,
): () => void {
  const loaded = loadSliceAddon(sliceAddon);
  if (loaded.problem) onProblem?.(`background threads keep the default slice: ${loaded.problem}`);
  const slice = loaded.addon ? { addon: loaded.addon, done: new Set<number>() } : undefined;
  let told = false;
  const sweepIfChanged = createThreadSweep(slice);
  const sweep = () => {
    const r = sweepIfChanged();
    if (r?.problem && !told) {
      told = true;
      onProblem?.(r.problem);
    }
  };
  sweep();
  const timer = setInterval(sweep, BACKGROUND_SWEEP_MS);
  timer.unref();
  return () => clearInterval(timer);
}
