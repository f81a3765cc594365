import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSend } from '../../agent-stub/readiness/send-waiter.js';
import { probeSupported } from '../../agent-stub/readiness/tty-wait-probe.js';
import { ScreenModelHost } from '../../agent-stub/session/screen-model.js';
import { SessionRegistry } from '../../agent-stub/session/session-registry.js';
import { DEFAULT_READINESS } from '../../provider/readiness-config.js';
import { stubBundlePath } from '../../relay/stub-bundle.js';

const supported = probeSupported();
if (!supported)
  console.warn(`skipping the wait exit-code test: no /proc probe on ${process.platform}/${process.arch}`);

/**
 * A wait (a send of empty text) reports the exit code of the last command only while no other
 * command has started: the session forgets the code when the next command starts. Real bash in
 * a real PTY, the daemon's session and readiness code in this process.
 */
describe.skipIf(!supported)('the exit code a wait reports', { timeout: 60_000 }, () => {
  let root: string;
  let model: ScreenModelHost;
  let registry: SessionRegistry;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'ptr-wait-code-'));
    mkdirSync(join(root, 'home'));
    writeFileSync(join(root, 'home', '.bashrc'), '');
    model = new ScreenModelHost(stubBundlePath());
    const limits = { ringBytes: 1 << 20, scrollbackRows: 1000, creditWindow: 256 * 1024 };
    registry = new SessionRegistry(model, limits, join(root, 'shell'));
  });
  afterAll(async () => {
    await registry?.shutdownAll();
    await model?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  it('is not the code of the command before the one that now waits for input', async () => {
    const home = join(root, 'home');
    const { session } = registry.spawn({
      cols: 120,
      rows: 30,
      command: 'bash',
      cwd: home,
      env: { HOME: home },
    });
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
