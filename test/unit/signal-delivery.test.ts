import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { signalStillPending, signalTaken } from '../../agent-stub/session/signal-delivery.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const status = (fields: Record<string, string>) =>
  Object.entries({ State: 'S (sleeping)', SigPnd: '0', ShdPnd: '0', SigBlk: '0', ...fields })
    .map(([k, v]) => `${k}:\t${v}`)
    .join('\n');

describe('signalStillPending', () => {
  it('reads the process-wide and the thread mask; SIGINT is bit 1', () => {
    expect(signalStillPending(status({}), 2)).toBe(false);
    expect(signalStillPending(status({ ShdPnd: '0000000000000002' }), 2)).toBe(true);
    expect(signalStillPending(status({ SigPnd: '0000000000000002' }), 2)).toBe(true);
    expect(signalStillPending(status({ ShdPnd: '0000000000004000' }), 2)).toBe(false);
    expect(signalStillPending(status({ ShdPnd: '0000000000004000' }), 15)).toBe(true);
    // Real-time signals sit above bit 31.
    expect(signalStillPending(status({ ShdPnd: '0000000100000000' }), 33)).toBe(true);
  });

  it('a blocked signal or a zombie has nothing to wait for', () => {
    expect(signalStillPending(status({ ShdPnd: '2', SigBlk: '2' }), 2)).toBe(false);
    expect(signalStillPending(status({ State: 'Z (zombie)', ShdPnd: '2' }), 2)).toBe(false);
  });
});

describe.skipIf(process.platform !== 'linux')('signalTaken', () => {
  it('waits while a stopped process keeps the signal pending, and answers once it took it', async () => {
    // A handler, not the default action: the kernel ends a stopped process at once for that.
    // (`read` from a pipe nobody writes: no child process of its own.)
    const child = spawn('bash', ['-c', 'trap "exit 0" TERM; read -r x'], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const pid = child.pid as number;
    const gone = new Promise((r) => child.once('exit', r));
    try {
      await sleep(200); // the trap is set
      process.kill(pid, 'SIGSTOP');
      // Stopped first: a SIGTERM pending with the SIGSTOP would be taken before it (lower number).
      while (!/^State:\s*T/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))) await sleep(5);
      process.kill(pid, 'SIGTERM');
      expect(await signalTaken([pid], 15, 100)).toBe(false);
      setTimeout(() => process.kill(pid, 'SIGCONT'), 200);
      const t0 = Date.now();
      expect(await signalTaken([pid], 15, 5000)).toBe(true);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
      await gone;
      // A process that is gone has nothing pending.
      expect(await signalTaken([pid], 15, 100)).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
