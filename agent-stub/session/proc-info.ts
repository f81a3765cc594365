import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type { ForegroundProcess } from '../../provider/contract.js';
import { monotonicMs } from '../../provider/monotonic-ms.js';

/** Fields of /proc/<pid>/stat we use (1-based field numbers from proc(5)). */
export interface ProcStat {
  pid: number;
  comm: string;
  state: string;
  ppid: number;
  pgrp: number;
  /** Device number of the controlling terminal, 0 without one (field 7; encoded as stat's rdev). */
  ttyNr: number;
  /** Foreground process group of the controlling terminal (field 8). */
  tpgid: number;
}

export function readProcStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm is in parentheses and may itself contain spaces or ')'; the last ')' ends it.
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const rest = text
    .slice(close + 2)
    .trim()
    .split(' ');
  return {
    pid,
    comm,
    state: rest[0],
    ppid: Number(rest[1]),
    pgrp: Number(rest[2]),
    ttyNr: Number(rest[4]),
    tpgid: Number(rest[5]),
  };
}

export function readCwd(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

export function readArgv(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const parts = raw.split('\0');
    if (parts[parts.length - 1] === '') parts.pop();
    return parts;
  } catch {
    return undefined;
  }
}

/** The process group leader in the PTY's foreground, or the shell itself when nothing else runs. */
export function foregroundProcess(shellPid: number): ForegroundProcess | undefined {
  const st = readProcStat(shellPid);
  if (!st) return undefined;
  const pid = st.tpgid > 0 ? st.tpgid : shellPid;
  const fg = readProcStat(pid) ?? st;
  return { pid: fg.pid, name: fg.comm, argv: readArgv(fg.pid) };
}

/** Foreground process group id of the PTY (for signals), falling back to the shell's group. */
export function foregroundGroup(shellPid: number): number | undefined {
  const st = readProcStat(shellPid);
  if (!st) return undefined;
  return st.tpgid > 0 ? st.tpgid : st.pgrp;
}

function allStats(): ProcStat[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const out: ProcStat[] = [];
  for (const name of names) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const st = readProcStat(Number(name));
    if (st) out.push(st);
  }
  return out;
}

export function childPids(parentPid: number): number[] {
  return allStats()
    .filter((s) => s.ppid === parentPid)
    .map((s) => s.pid);
}

/**
 * A scan of /proc is reused for this long: shutting many sessions down at once (a relay ending
 * 500 terminals) then reads /proc a few times instead of once per session, which made it
 * quadratic (2.9 s for 500). A process forked after the scan still gets the PTY's hangup.
 */
const TREE_REUSE_MS = 25;
let tree: { at: number; children: Map<number, number[]> } | undefined;

function processTree(): Map<number, number[]> {
  const now = monotonicMs();
  if (tree && now - tree.at < TREE_REUSE_MS) return tree.children;
  const children = new Map<number, number[]>();
  for (const s of allStats()) {
    const list = children.get(s.ppid);
    if (list) list.push(s.pid);
    else children.set(s.ppid, [s.pid]);
  }
  tree = { at: now, children };
  return children;
}

/** Every descendant of `pid`, from a recent scan of /proc. */
export function descendantPids(pid: number): number[] {
  const children = processTree();
  const result: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const c of children.get(queue.shift()!) ?? []) {
      result.push(c);
      queue.push(c);
    }
  }
  return result;
}
