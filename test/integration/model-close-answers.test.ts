import { afterAll, describe, expect, it } from 'vitest';
import { ScreenModelHost } from '../../agent-stub/session/screen-model.js';
import { PtyRelayError } from '../../provider/errors.js';
import { modelWorkerFile } from '../support/in-process-sessions.js';

/**
 * The model worker answers every request, even one that races the session's close: a save at a
 * session's exit asks for its last screen, and a daemon that is shutting down waits for that save.
 * Before, the close dropped the queued request and the caller waited for the 15 s timeout, long
 * enough for a superseded daemon to outlive its upgrade (upgrade.test.ts).
 */
describe('screen model requests around a close (real worker)', () => {
  const model = new ScreenModelHost(modelWorkerFile());
  afterAll(async () => {
    await model.dispose();
  });

  it('answers a snapshot asked just before the close with the last screen', async () => {
    model.post({ kind: 'open', sid: 's1', cols: 40, rows: 5, scrollback: 100 });
    model.post({ kind: 'data', sid: 's1', seq: 0, data: Buffer.from('last words\r\n') });
    const t0 = Date.now();
    const snap = model.snapshot('s1', 10);
    model.post({ kind: 'close', sid: 's1' });
    const s = await snap;
    expect(Buffer.from(s.data).toString()).toContain('last words');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('refuses a request for a closed model at once with SESSION_EXITED', async () => {
    const t0 = Date.now();
    const err = await model.snapshot('s1', 10).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PtyRelayError);
    expect((err as PtyRelayError).code).toBe('SESSION_EXITED');
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});
