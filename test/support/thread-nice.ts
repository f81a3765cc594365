import { existsSync, readFileSync } from 'node:fs';
import { release } from 'node:os';

/** Nice value of a process or thread from its /proc stat file (`/proc/PID/stat`, `/proc/PID/task/TID/stat`). */
export function niceOf(statPath: string): number {
  const stat = readFileSync(statPath, 'utf8');
  // The command may hold spaces and parentheses: fields are counted after its closing one (field 19).
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

/** The kernel's time slice (ns) of a process or thread, from its scheduler debug file (`/proc/PID/task/TID/sched`). */
export function sliceOf(schedPath: string): number {
  const m = /se\.slice\s*:\s*(\d+)/.exec(readFileSync(schedPath, 'utf8'));
  if (!m) throw new Error(`${schedPath} shows no se.slice`);
  return Number(m[1]);
}

/**
 * Why custom slices cannot be checked here, or undefined when they can: fair threads' slices came
 * with Linux 6.12, and /proc shows them only where the kernel has its scheduler debug files.
 */
export function slicesUnseen(): string | undefined {
  const [major = 0, minor = 0] = release().split('.').map(Number);
  if (major < 6 || (major === 6 && minor < 12)) return `kernel ${release()} has no custom slices`;
  if (!existsSync('/proc/self/sched') || !/se\.slice/.test(readFileSync('/proc/self/sched', 'utf8')))
    return `kernel ${release()} shows no slices in /proc/self/sched`;
  return undefined;
}
