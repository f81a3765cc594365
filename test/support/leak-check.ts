import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * vitest globalSetup: the suite leaves nothing behind. The run gets its own TMPDIR (so runs of
 * other worktrees on this machine, which share /tmp and the test users, are not counted) and a
 * marker variable that every process it starts inherits — local daemons, the shells they spawn,
 * and, through the test sshd's `SetEnv`, the test users' daemons and shells. After the suite:
 * no `ptr-*` / `ptyrelay-*` directory in the run's TMPDIR and no process carrying the marker.
 */

/** Inherited by everything the run starts. Not `PTYRELAY_*`: the stub strips those from shells. */
export const RUN_MARKER_VAR = 'PTRTEST_RUN';
/** The machine's temp dir, for files shared across runs (the useradd lock). */
export const SHARED_TMP_VAR = 'PTRTEST_SHARED_TMP';
/** Names test code gives its temp dirs. */
const LEAK_PATTERN = /^(ptr|ptyrelay)-/;
/** Daemons told to stop and sshd children being killed may take a moment to exit. */
const SETTLE_MS = 15_000;
const POLL_MS = 250;
/** Sticky and world-writable like /tmp: the test users' processes create their dirs here too. */
const SHARED_DIR_MODE = 0o1777;

let runDir: string | undefined;
let runId: string | undefined;

export function setup(): void {
  const base = tmpdir();
  runDir = mkdtempSync(join(base, 'ptrtest-'));
  chmodSync(runDir, SHARED_DIR_MODE);
  runId = runDir.slice(runDir.lastIndexOf('-') + 1);
  process.env[SHARED_TMP_VAR] = base;
  process.env[RUN_MARKER_VAR] = runId;
  process.env.TMPDIR = runDir;
}

/** Pids (not ours) whose environment carries this run's marker, with their command lines. */
function markedProcesses(marker: string): string[] {
  const needle = Buffer.from(`\0${RUN_MARKER_VAR}=${marker}\0`);
  const out: string[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let environ: Buffer;
    let cmdline: string;
    try {
      environ = Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${name}/environ`)]);
      cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Exited while we looked, or a process the sandbox hides from root (pid 1's environ): the
      // run's own processes are children of ours or of the test sshd, and readable.
      if (code === 'ENOENT' || code === 'ESRCH' || code === 'EACCES') continue;
      throw err;
    }
    if (environ.includes(needle) && !isZombie(name)) out.push(`pid ${name}: ${cmdline} (${originOf(name)})`);
  }
  return out;
}

function isZombie(pid: string): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
}

/** What a leftover dir holds, two levels deep (tells a daemon started after cleanup from a dir never removed). */
function contentsOf(dir: string): string {
  const names: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory()) names.push(e.name);
    else names.push(`${e.name}/{${readdirSync(join(dir, e.name)).join(',')}}`);
  }
  return names.join(' ');
}

/** /proc's process times are in USER_HZ ticks: 100 per second on Linux's user ABI. */
const USER_HZ = 100;

/** Parent pid and age of a process (tells which test's cleanup it outlived). */
function originOf(pid: string): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const upS = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    // fields[0] is the state (field 3 of stat): ppid is field 4, starttime field 22.
    const ageS = Math.round(upS - Number(fields[19]) / USER_HZ);
    return `ppid ${fields[1]}, started ${ageS} s before the check`;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'exited';
    throw err;
  }
}

function leftoverDirs(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => LEAK_PATTERN.test(n) && statSync(join(dir, n), { throwIfNoEntry: false })?.isDirectory())
    .map((n) => join(dir, n));
}

export async function teardown(): Promise<void> {
  if (!runDir || !runId) return;
  const deadline = Date.now() + SETTLE_MS;
  let procs = markedProcesses(runId);
  let dirs = leftoverDirs(runDir);
  while ((procs.length > 0 || dirs.length > 0) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    procs = markedProcesses(runId);
    dirs = leftoverDirs(runDir);
  }
  const lines = [
    ...dirs.map((d) => `  dir left behind: ${d} (holds: ${contentsOf(d)})`),
    ...procs.map((p) => `  process left behind: ${p}`),
  ];
  // Clean up either way, so a failed check does not leave the machine dirty for the next run.
  for (const p of procs) {
    try {
      process.kill(Number(p.split(':')[0]!.slice(4)), 'SIGKILL');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }
  rmSync(runDir, { recursive: true, force: true });
  if (lines.length > 0) {
    // vitest reports a teardown error but keeps its exit code: fail the run ourselves.
    process.exitCode = 1;
    throw new Error(`the test run left things behind (now removed):\n${lines.join('\n')}`);
  }
  process.stdout.write(`leak check: no temp dirs or processes left by this run (${runDir})\n`);
}
