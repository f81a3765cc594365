import { describe, expect, it } from 'vitest';
import { type ReadinessSession, runSend } from '../../agent-stub/readiness/send-waiter.js';
import type { SessionWatcher } from '../../agent-stub/session/pty-session.js';
import { DEFAULT_READINESS } from '../../provider/readiness-config.js';

/**
 * A send of empty text (the "wait") that starts between a command's end and the next prompt.
 * bash writes the two in separate writes, so the daemon can read them in separate turns and a
 * wait can start in between (a run of the suite saw `signal INT` then an empty send end without
 * the 130). The order is forced here with a session of facts only; the real shell runs in
 * agent-wait-exit-code.test.ts and the agent suites.
 */
function session(atPrompt: boolean, lastExitCode: number | undefined) {
  const watchers = new Set<SessionWatcher>();
  const s: ReadinessSession = {
    // No such process (above Linux's largest pid): /proc knows nothing, so only the facts decide.
    pid: 2 ** 22 + 1,
    ttyPath: undefined,
    alive: true,
    history: { start: 0, head: 0, read: async () => Buffer.alloc(0) },
    atPrompt,
    lastExitCode,
    write: () => {},
    watch: (w) => {
      watchers.add(w);
      return () => watchers.delete(w);
    },
  };
  const prompt = () => {
    for (const w of watchers) w.fact({ type: 'promptStart' });
  };
  return { s, prompt };
}

describe('the exit code of a wait', () => {
  it('a wait started after the command ended but before its prompt reports the code', async () => {
    const { s, prompt } = session(false, 130);
    const done = runSend(s, { data: '', timeoutMs: 5000 }, DEFAULT_READINESS);
    prompt();
    expect(await done).toMatchObject({ reason: 'stdin_read', exitCode: 130 });
  });

  it('typed text never reports the code of the command before it', async () => {
    const { s, prompt } = session(true, 1);
    const done = runSend(s, { data: 'true', timeoutMs: 5000 }, DEFAULT_READINESS);
    setTimeout(prompt, 50);
    const r = await done;
    expect(r.reason).toBe('stdin_read');
    expect(r.exitCode).toBeUndefined();
  });
});
