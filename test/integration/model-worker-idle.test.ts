import { afterAll, describe, expect, it } from 'vitest';
import { ScreenModelHost, WORKER_IDLE_MS } from '../../agent-stub/session/screen-model.js';
import { modelWorkerFile } from '../support/in-process-sessions.js';
import { waitFor } from '../support/local-daemon.js';

/**
 * The model worker costs a daemon about 20 MB. A daemon whose terminals were all shut down kept
 * it for good; now it ends WORKER_IDLE_MS after the last model closed (once it answered every
 * request), and the next terminal starts a new one, as the first terminal did.
 */
describe('the model worker of a daemon without terminals (real worker)', () => {
  const model = new ScreenModelHost(modelWorkerFile());
  let lost = 0;
  model.onLost(() => lost++);
  afterAll(async () => {
    await model.dispose();
  });

  const screenOf = async (sid: string) => Buffer.from((await model.snapshot(sid, 10)).data).toString();

  it('ends once no model is open, and starts again for the next one', async () => {
    model.post({ kind: 'open', sid: 'a', cols: 40, rows: 5, scrollback: 100 });
    model.post({ kind: 'data', sid: 'a', seq: 0, data: Buffer.from('first terminal\r\n') });
    expect(await screenOf('a')).toContain('first terminal');
    model.post({ kind: 'open', sid: 'b', cols: 40, rows: 5, scrollback: 100 });
    model.post({ kind: 'close', sid: 'a' });
    // One model is still open: the worker stays past the idle time.
    await new Promise((r) => setTimeout(r, WORKER_IDLE_MS + 500));
    expect(model.running).toBe(true);
    model.post({ kind: 'close', sid: 'b' });
    await waitFor(() => !model.running, WORKER_IDLE_MS + 5000, 'the idle worker to end');
    // Ended on purpose: not a loss, no model is rebuilt.
    expect(lost).toBe(0);
    model.post({ kind: 'open', sid: 'c', cols: 40, rows: 5, scrollback: 100 });
    model.post({ kind: 'data', sid: 'c', seq: 0, data: Buffer.from('next terminal\r\n') });
    expect(model.running).toBe(true);
    expect(await screenOf('c')).toContain('next terminal');
    model.post({ kind: 'close', sid: 'c' });
    await waitFor(() => !model.running, WORKER_IDLE_MS + 5000, 'the idle worker to end again');
    expect(lost).toBe(0);
  }, 30_000);
});
