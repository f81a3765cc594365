import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, statSync } from 'node:fs';
import { readProcStat } from '../session/proc-info.js';

/**
 * Linux facts about whether a terminal's foreground process group waits for tty input, read from
 * /proc (see docs/agents.md): a member blocked in `read` on the tty (its /dev/pts path, or
 * /dev/tty when the tty is the member's controlling terminal: ssh, sudo and git's credential
 * prompt read passwords there), or in poll/ppoll/select/pselect6 with the tty among the polled
 * descriptors (the fd list is read from /proc/<pid>/mem; the daemon is the ancestor of every
 * process of its terminals, which is what ptrace access needs), or in epoll_wait on an epoll set
 * that holds the tty for reading (/proc/<pid>/fdinfo).
 */

/** Syscall numbers per architecture (unistd.h); other architectures get no probe. */
const SYSCALLS: Record<string, { read: number[]; poll: number[]; select: number[]; epoll: number[] }> = {
  x64: { read: [0, 19], poll: [7, 271], select: [23, 270], epoll: [232, 281, 441] },
  arm64: { read: [63, 65], poll: [73], select: [72], epoll: [22, 441] },
};
/** struct pollfd: int fd; short events; short revents. */
const POLLFD_BYTES = 8;
const POLLIN = 0x1;
const EPOLLIN = 0x1;
/** Bounds of what is read from a process's memory (a REPL polls a handful of descriptors). */
const MAX_POLL_FDS = 1024;
const MAX_SELECT_FDS = 8192;

/** One foreground member found waiting on the tty. */
export interface TtyWait {
  pid: number;
  /** voluntary_ctxt_switches: changes whenever the process woke and slept again. */
  switches: number;
}

export interface TtyProbe {
  /** Foreground process group of the terminal. */
  foregroundPgrp: number;
  /** The foreground group is the top process's own (the shell is in the foreground). */
  topIsForeground: boolean;
  /** Members waiting for tty input. */
  waits: TtyWait[];
  /**
   * The top process itself (the shell) is blocked waiting for tty input; false when it runs or
   * waits on anything else (a command substitution, a child), undefined when /proc does not tell.
   */
  topWaits: boolean | undefined;
  /** A member is running or in uninterruptible sleep (it is working, not waiting). */
  busy: boolean;
  /** Names (comm) of the foreground group's members (the top process's tree, breadth first). */
  names: string[];
}

export function probeSupported(): boolean {
  return process.platform === 'linux' && SYSCALLS[process.arch] !== undefined;
}

/** Processes of the top process's tree (children files, else a scan of /proc). */
function treeOf(top: number): number[] {
  const out = [top];
  for (let i = 0; i < out.length; i++) {
    const pid = out[i];
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // exited meanwhile
    }
    for (const t of tasks) {
      let kids = '';
      try {
        kids = readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8');
      } catch {
        continue; // kernel without CONFIG_PROC_CHILDREN or task gone
      }
      for (const k of kids.split(' ')) if (k.trim()) out.push(Number(k));
    }
  }
  return out;
}

function switchesOf(pid: number): number {
  try {
    const m = /^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : -1;
  } catch {
    return -1;
  }
}

/** Whether `tty` is the controlling terminal of `pid` (/proc/<pid>/stat's tty_nr is its device). */
function controlsTty(pid: number, tty: string): boolean {
  try {
    return readProcStat(pid)?.ttyNr === statSync(tty).rdev;
  } catch {
    return false;
  }
}

/**
 * The process's descriptors that are the tty. A descriptor opened as /dev/tty reads as
 * "/dev/tty" in /proc; it is the tty when the tty is the process's controlling terminal.
 */
function ttyFds(pid: number, tty: string): Set<number> {
  const fds = new Set<number>();
  let names: string[];
  try {
    names = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return fds;
  }
  let viaDevTty: number[] = [];
  for (const n of names) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${n}`);
      if (link === tty) fds.add(Number(n));
      else if (link === '/dev/tty') viaDevTty.push(Number(n));
    } catch {
      // closed meanwhile
    }
  }
  if (viaDevTty.length > 0 && !controlsTty(pid, tty)) viaDevTty = [];
  for (const fd of viaDevTty) fds.add(fd);
  return fds;
}

function readMem(pid: number, address: number, length: number): Buffer | undefined {
  if (!(address > 0) || length <= 0) return undefined;
  let fd: number | undefined;
  try {
    fd = openSync(`/proc/${pid}/mem`, 'r');
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, address);
    return n === length ? buf : undefined;
  } catch {
    return undefined; // no ptrace access (setuid program) or the address went away
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function epollHasTty(pid: number, epfd: number, fds: Set<number>): boolean {
  let info: string;
  try {
    info = readFileSync(`/proc/${pid}/fdinfo/${epfd}`, 'utf8');
  } catch {
    return false;
  }
  for (const m of info.matchAll(/^tfd:\s*(\d+)\s+events:\s*([0-9a-f]+)/gm)) {
    if (fds.has(Number(m[1])) && (Number.parseInt(m[2], 16) & EPOLLIN) !== 0) return true;
  }
  return false;
}

/** Whether `pid`, blocked in the syscall described by /proc/<pid>/syscall, waits for the tty. */
export function waitsOnTty(pid: number, tty: string): boolean {
  return ttyWaitOf(pid, tty) === true;
}

/**
 * Whether `pid` waits for tty input: true or false when /proc says so, undefined when it does
 * not tell (no ptrace access to /proc/<pid>/syscall or to the polled descriptors, or the process
 * went away while it was read).
 */
export function ttyWaitOf(pid: number, tty: string): boolean | undefined {
  const nums = SYSCALLS[process.arch];
  if (!nums) return undefined;
  let line: string;
  try {
    line = readFileSync(`/proc/${pid}/syscall`, 'utf8').trim();
  } catch {
    return undefined;
  }
  const parts = line.split(' ');
  const nr = Number(parts[0]);
  if (!Number.isInteger(nr) || nr < 0) return false; // "running" or not in a syscall
  const arg = (i: number) => Number(parts[i + 1]);
  if (![...nums.read, ...nums.poll, ...nums.select, ...nums.epoll].includes(nr)) return false;
  const fds = ttyFds(pid, tty);
  if (fds.size === 0) return false;
  if (nums.read.includes(nr)) return fds.has(arg(0));
  if (nums.epoll.includes(nr)) return epollHasTty(pid, arg(0), fds);
  if (nums.poll.includes(nr)) {
    const n = Math.min(arg(1), MAX_POLL_FDS);
    const mem = readMem(pid, arg(0), n * POLLFD_BYTES);
    if (!mem) return undefined;
    for (let i = 0; i < n; i++) {
      const fd = mem.readInt32LE(i * POLLFD_BYTES);
      const events = mem.readInt16LE(i * POLLFD_BYTES + 4);
      if (fds.has(fd) && (events & POLLIN) !== 0) return true;
    }
    return false;
  }
  // select/pselect6: nfds, readfds (a bitmap of longs, little-endian on x64 and arm64).
  const nfds = Math.min(arg(0), MAX_SELECT_FDS);
  const mem = readMem(pid, arg(1), Math.ceil(nfds / 8));
  if (!mem) return undefined;
  for (const fd of fds) if (fd < nfds && (mem[fd >> 3] & (1 << (fd & 7))) !== 0) return true;
  return false;
}

/** Reads the facts for the terminal whose top process is `top` and whose tty is `tty`. */
export function probeTty(top: number, tty: string): TtyProbe | undefined {
  const topStat = readProcStat(top);
  if (!topStat || topStat.tpgid <= 0) return undefined;
  const fg = topStat.tpgid;
  const waits: TtyWait[] = [];
  let busy = false;
  let topWaits: boolean | undefined = false;
  const names: string[] = [];
  for (const pid of treeOf(top)) {
    const st = pid === top ? topStat : readProcStat(pid);
    if (!st || st.pgrp !== fg) continue;
    names.push(st.comm);
    if (st.state === 'R' || st.state === 'D') {
      busy = true;
      continue;
    }
    if (st.state !== 'S') continue;
    const waiting = ttyWaitOf(pid, tty);
    if (pid === top) topWaits = waiting;
    if (waiting) waits.push({ pid, switches: switchesOf(pid) });
  }
  return { foregroundPgrp: fg, topIsForeground: fg === topStat.pgrp, waits, busy, topWaits, names };
}

/**
 * Waits of `now` that are new relative to `before` (taken just before the send's write): a
 * process not waiting then, or one that woke up since (its switch count moved).
 */
export function newWaits(now: readonly TtyWait[], before: ReadonlyMap<number, number>): TtyWait[] {
  return now.filter((w) => before.get(w.pid) !== w.switches);
}
