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

/**
 * A wait (a send of empty text) reports the exit code of the last command only while no other
 * command has started: the session forgets the code when the next command starts. Real bash in
 * a real PTY, the daemon's session and readiness code in this process.
 */
describe.skipIf(!supported)('the exit code a wait reports', { timeout: 60_000 }, () => {
  const sessions = inProcessSessions('ptr-wait-code-', '');

  it('is not the code of the command before the one that now waits for input', async () => {
    const session = sessions.spawnBash();
    const cfg = { ...DEFAULT_READINESS, inferredIdleMs: 20_000 };
    const failed = await runSend(session, { data: 'false\r', timeoutMs: 20_000 }, cfg);
    expect(failed).toMatchObject({ reason: 'stdin_read', exitCode: 1 });
    // `read` runs and waits for a line: the shell's prompt is not back, `false`'s code is history.
    const reading = await runSend(session, { data: 'read line\r', timeoutMs: 20_000 }, cfg);
    expect(reading.reason).toBe('stdin_read');
    const waited = await runSend(session, { data: '', timeoutMs: 20_000 }, cfg);
    expect(waited.reason).toBe('stdin_read');
    expect(waited.exitCode).toBeUndefined();
    // Once `read` has its line, its own code comes back with the prompt.
    const done = await runSend(session, { data: 'x\r', timeoutMs: 20_000 }, cfg);
    expect(done).toMatchObject({ reason: 'stdin_read', exitCode: 0 });
  });
});
