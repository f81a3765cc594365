import { describe, expect, it } from 'vitest';
import { runSend } from '../../agent-stub/readiness/send-waiter.js';
import { probeSupported } from '../../agent-stub/readiness/tty-wait-probe.js';
import { DEFAULT_READINESS } from '../../provider/readiness-config.js';
import { capability } from '../support/capabilities.js';
import { inProcessSessions } from '../support/in-process-sessions.js';

const supported = capability(
  'proc-probe',
  probeSupported() ? undefined : `no /proc tty-wait probe on ${process.platform}/${process.arch}`,
);

/** Long enough for the shell to read the typed line, run PS0's sleep and the command, and wait again. */
const STARVED_MS = 1500;

/**
 * The stub's readiness poll, in this process with a real bash, while the event loop is starved:
 * /proc then shows the shell already waiting at its next prompt while that prompt's output (and
 * the command's facts) still sit unread in the kernel.
 */
describe.skipIf(!supported)('an agent send in a starved daemon', { timeout: 60_000 }, () => {
  // Slow startup (the send is typed before the first prompt) and a PS0 that keeps the shell
  // busy without output after it read the line.
  const sessions = inProcessSessions('ptr-send-lag-', `sleep 1\nPS0='$(sleep 0.3)'\n`);

  it('does not end at a prompt whose successor /proc sees before the output is read', async () => {
    const session = sessions.spawnBash();
    let starved = false;
    const off = session.watch({
      output: () => {},
      // The startup prompt's marker: from here on the daemon gets no event-loop turn for a while.
      fact: (f) => {
        if (f.type !== 'promptStart' || starved) return;
        starved = true;
        const until = Date.now() + STARVED_MS;
        while (Date.now() < until) {
          // busy: a daemon starved of CPU
        }
      },
      exit: () => {},
    });
    const r = await runSend(
      session,
      { data: 'echo lag-$((6*7))\r', timeoutMs: 30_000 },
      { ...DEFAULT_READINESS, inferredIdleMs: 20_000 },
    );
    off();
    expect(starved).toBe(true);
    expect(r).toMatchObject({ reason: 'stdin_read', exitCode: 0 });
    expect(r.output).toMatch(/^lag-42$/m);
  });
});
