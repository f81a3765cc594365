import { readFileSync } from 'node:fs';

/**
 * Waiting until the processes a signal was sent to have taken it. A signal sent to a program
 * blocked in `read` on the tty takes effect only once the program runs again; input written
 * before that reaches the program first: Linux's tty read hands out available input before it
 * looks at pending signals. So `python3 -c "input()"` interrupted and then typed into at once
 * (before the scheduler ran it: a loaded machine) read the next command itself and died with it,
 * and the shell never saw the command. The stub answers a signal request once the signal is no
 * longer pending anywhere it went, so what a client types after the answer goes to whoever reads
 * next (the shell's prompt after the program died, or the program itself if it lived on).
 */

/** The longest a signal's answer waits for the signal to be taken (a stopped process keeps it pending). */
export const SIGNAL_TAKEN_WAIT_MS = 1000;
/** How often /proc is read meanwhile (a signal is usually taken within a millisecond). */
const SIGNAL_TAKEN_POLL_MS = 2;

const hexMask = (status: string, field: string): bigint => {
  const m = new RegExp(`^${field}:\\s*([0-9a-fA-F]+)$`, 'm').exec(status);
  return m ? BigInt(`0x${m[1]}`) : 0n;
};

/**
 * Whether a process whose /proc/<pid>/status is `status` still has signal `num` pending, and will
 * take it (a blocked signal stays pending until the program unblocks it: nothing to wait for). A
 * zombie has nothing pending. Pure.
 */
export function signalStillPending(status: string, num: number): boolean {
  if (/^State:\s*[ZX]/m.test(status)) return false;
  const bit = 1n << BigInt(num - 1);
  const pending = hexMask(status, 'ShdPnd') | hexMask(status, 'SigPnd');
  return (pending & bit) !== 0n && (hexMask(status, 'SigBlk') & bit) === 0n;
}

function pendingIn(pid: number, num: number): boolean {
  try {
    return signalStillPending(readFileSync(`/proc/${pid}/status`, 'utf8'), num);
  } catch {
    return false; // gone
  }
}

/**
 * Resolves once none of `pids` has signal `num` pending (or after `waitMs`): true when the signal
 * was taken everywhere. Without /proc it resolves at once.
 */
export async function signalTaken(
  pids: readonly number[],
  num: number,
  waitMs = SIGNAL_TAKEN_WAIT_MS,
): Promise<boolean> {
  if (process.platform !== 'linux') return true;
  const deadline = Date.now() + waitMs;
  let left = pids.filter((p) => pendingIn(p, num));
  while (left.length > 0) {
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, SIGNAL_TAKEN_POLL_MS));
    left = left.filter((p) => pendingIn(p, num));
  }
  return true;
}
