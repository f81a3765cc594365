import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';

export const now = (): number => performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` every `pollMs` until it returns a truthy value; throws after `timeoutMs`. */
export async function waitFor<T>(
  fn: () => T | undefined | false | null,
  timeoutMs: number,
  what: string,
  pollMs = 5,
): Promise<T> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(pollMs);
  }
}

/** Rejects when `p` has not settled within `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples; NaN when empty. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** Median; the mean of the middle two for an even count. */
export function median(samples: readonly number[]): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function summarize(samples: readonly number[]): {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
} {
  const n = samples.length;
  const mean = n === 0 ? Number.NaN : samples.reduce((a, b) => a + b, 0) / n;
  return {
    n,
    min: n === 0 ? Number.NaN : Math.min(...samples),
    p50: percentile(samples, 50),
    p90: percentile(samples, 90),
    p99: percentile(samples, 99),
    max: n === 0 ? Number.NaN : Math.max(...samples),
    mean,
  };
}

export const round = (v: number, digits = 2): number => {
  if (!Number.isFinite(v)) return v;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
};

/** A /proc/<pid>/status field in bytes (VmRSS, VmHWM…), undefined when the process is gone. */
export function procStatusBytes(pid: number, field: string): number | undefined {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Proportional set size (shared pages split between sharers), bytes; undefined when unreadable. */
export function procPss(pid: number): number | undefined {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export function procComm(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) of a process in ms, from /proc/<pid>/stat; undefined when gone. */
export function procCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(f[11]) + Number(f[12]);
    return (ticks * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/**
 * CPU time of one thread in ms (nanosecond counts, from /proc/<pid>/task/<tid>/schedstat: time on
 * a CPU, user and kernel); the main thread by default. Undefined when it is gone.
 */
export function threadCpuMs(pid: number, tid = pid): number | undefined {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return undefined;
  }
}

/** A process's read calls so far (`syscr` of /proc/<pid>/io: read, readv, recv…); undefined when gone or unreadable. */
export function procReadCalls(pid: number): number | undefined {
  try {
    const m = /^syscr:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Every descendant pid of `root` (from /proc). */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const queue = [root];
  for (let p = queue.shift(); p !== undefined; p = queue.shift()) {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

/** Bytes this process read through read(2)-like calls so far (/proc/self/io rchar). */
export function selfReadBytes(): number | undefined {
  try {
    const m = /^rchar:\s+(\d+)/m.exec(readFileSync('/proc/self/io', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memTotalBytes: number;
  node: string;
  platform: string;
  kernel: string;
  openssh: string;
  gitCommit: string;
  gitDirty: boolean;
  /** Tracked files that differ from the commit (others edit the tree while benches run). */
  gitModified: string[];
  gitUntrackedCount: number;
  loadAvgAtStart: number[];
}

export function machineInfo(root: string): MachineInfo {
  const git = (args: string[]): string => {
    try {
      return execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim();
    } catch {
      return '';
    }
  };
  let openssh = '';
  try {
    const r = execFileSync('ssh', ['-V'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    openssh = r.trim();
  } catch (err) {
    openssh = String((err as { stderr?: string }).stderr ?? '').trim();
  }
  if (!openssh) {
    // ssh -V prints to stderr and exits 0.
    try {
      openssh = execFileSync('sh', ['-c', 'ssh -V 2>&1'], { encoding: 'utf8' }).trim();
    } catch {
      openssh = 'unknown';
    }
  }
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memTotalBytes: os.totalmem(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    kernel: os.release(),
    openssh,
    gitCommit: git(['rev-parse', 'HEAD']) || 'unknown',
    gitDirty: git(['status', '--porcelain', '--untracked-files=no']) !== '',
    gitModified: git(['diff', '--name-only', 'HEAD']).split('\n').filter(Boolean),
    gitUntrackedCount: git(['ls-files', '--others', '--exclude-standard']).split('\n').filter(Boolean).length,
    loadAvgAtStart: os.loadavg().map((v) => round(v, 2)),
  };
}

/** Jiffies of the whole machine (all cores) from /proc/stat: busy and total. */
export function machineCpu(): { busy: number; total: number } {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/** Share of all cores busy between two {@link machineCpu} readings, in percent. */
export function busyPercent(a: { busy: number; total: number }, b: { busy: number; total: number }): number {
  return b.total === a.total ? 0 : round(((b.busy - a.busy) / (b.total - a.total)) * 100, 1);
}

/** Share of all cores under which the machine counts as settled between two timed runs. */
const SETTLE_BUSY_PERCENT = 15;
const SETTLE_MAX_MS = 3000;

/**
 * Waits (≤ 3 s) until a 100 ms window shows the machine below 15 % busy, so no timed run starts
 * while the previous one's leftovers (a daemon's model catching up, a log removing its files, GC,
 * a closing relay) still use CPU. Returns how long it waited (ms).
 */
export async function settleMachine(): Promise<number> {
  const t0 = now();
  while (now() - t0 < SETTLE_MAX_MS) {
    const a = machineCpu();
    await sleep(100);
    if (busyPercent(a, machineCpu()) < SETTLE_BUSY_PERCENT) break;
  }
  return round(now() - t0 - 100, 0);
}

/** CPU ms of every process, by pid, with its command name (one /proc scan). */
export function cpuByPid(): Map<number, { comm: string; cpuMs: number }> {
  const out = new Map<number, { comm: string; cpuMs: number }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const cpuMs = procCpuMs(pid);
    const comm = procComm(pid);
    if (cpuMs !== undefined && comm !== undefined) out.set(pid, { comm, cpuMs });
  }
  return out;
}

/** CPU time used between two {@link cpuByPid} scans, summed by command name, largest first (percent of one core). */
export function cpuDeltaByComm(
  a: Map<number, { comm: string; cpuMs: number }>,
  b: Map<number, { comm: string; cpuMs: number }>,
  elapsedMs: number,
  top = 8,
): Record<string, number> {
  const sums = new Map<string, number>();
  for (const [pid, x] of b) {
    const d = x.cpuMs - (a.get(pid)?.cpuMs ?? 0);
    if (d > 0) sums.set(x.comm, (sums.get(x.comm) ?? 0) + d);
  }
  return Object.fromEntries(
    [...sums]
      .sort((p, q) => q[1] - p[1])
      .slice(0, top)
      .map(([k, v]) => [k, round((v / elapsedMs) * 100, 1)]),
  );
}

/** A full garbage collection of this process (`npm run bench` starts node with --expose-gc). */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('the bench needs node --expose-gc (npm run bench passes it)');
  gc();
}

/** A process's command line, arguments joined by spaces ('' when gone). */
export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** Programs the scenarios run themselves (possibly orphaned by the time of the scan) and kernel threads. */
const OWN_OR_KERNEL = /^(yes|cat|seq|sh|bash|ssh|sshd|stty|kworker|ksoftirqd|rcu_|migration|kdamond)/;

/**
 * CPU (percent of one core) that processes other than the bench's used between two
 * {@link cpuByPid} scans: an estimate of the noise from others sharing the machine. Ours: this
 * process, the roots given (sshd) and their descendants, any process whose command line names one
 * of `markers` (runtime dirs), and every process named like something the scenarios run.
 */
export function othersCpuPercent(
  a: Map<number, { comm: string; cpuMs: number }>,
  b: Map<number, { comm: string; cpuMs: number }>,
  elapsedMs: number,
  roots: number[],
  markers: string[],
): { percent: number; top: Record<string, number> } {
  const ours = new Set<number>([process.pid, ...descendants(process.pid)]);
  for (const r of roots) for (const p of [r, ...descendants(r)]) ours.add(p);
  for (const pid of b.keys()) {
    if (ours.has(pid)) continue;
    const cl = cmdline(pid);
    if (markers.some((m) => cl.includes(m))) for (const p of [pid, ...descendants(pid)]) ours.add(p);
  }
  const sums = new Map<string, number>();
  let total = 0;
  for (const [pid, x] of b) {
    if (ours.has(pid) || OWN_OR_KERNEL.test(x.comm)) continue;
    const d = x.cpuMs - (a.get(pid)?.cpuMs ?? 0);
    if (d <= 0) continue;
    total += d;
    sums.set(x.comm, (sums.get(x.comm) ?? 0) + d);
  }
  const top = Object.fromEntries(
    [...sums]
      .sort((p, q) => q[1] - p[1])
      .slice(0, 5)
      .map(([k, v]) => [k, round((v / elapsedMs) * 100, 1)]),
  );
  return { percent: round((total / elapsedMs) * 100, 1), top };
}

/**
 * Ends every daemon whose pid lock is in `dir` and whose command line names `dir` (a daemon of a
 * build that appeared mid-run is not reached by `shutdownDaemon`), then removes the dir.
 * Returns the pids that had to be ended.
 */
export async function cleanupRuntimeDir(dir: string): Promise<number[]> {
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const n of names.filter((x) => x.endsWith('.lock'))) {
    try {
      const pid = Number(readFileSync(`${dir}/${n}`, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && cmdline(pid).includes(dir)) pids.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  const signal = (pid: number, sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  };
  for (const pid of pids) signal(pid, 'SIGTERM');
  const deadline = now() + 5000;
  while (pids.some((p) => cmdline(p).includes(dir)) && now() < deadline) await sleep(50);
  for (const pid of pids) if (cmdline(pid).includes(dir)) signal(pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  return pids;
}
