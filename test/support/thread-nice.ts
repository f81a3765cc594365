import { readFileSync } from 'node:fs';

/** Nice value of a process or thread from its /proc stat file (`/proc/PID/stat`, `/proc/PID/task/TID/stat`). */
export function niceOf(statPath: string): number {
  const stat = readFileSync(statPath, 'utf8');
  // The command may hold spaces and parentheses: fields are counted after its closing one (field 19).
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}
