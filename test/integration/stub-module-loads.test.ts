import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stubBundlePath } from '../../relay/core/stub-bundle.js';
import { type LocalFixture, OutputCollector, startLocal, waitFor } from '../support/local-daemon.js';

/**
 * What the stub's processes load (agent-stub/main.ts, provider/monotonic-ms.ts,
 * agent-stub/restore/restore-store.ts). A daemon at work, with a shell, a client and the saved
 * restore record, has not loaded node's perf_hooks or fs/promises modules (about 1 MB of RSS for
 * code it never needs) nor the stub's parts it has not used yet (scripts/lib/stub-bundle.mjs), and
 * a `connect` bridge has not loaded the daemon: no node-pty in it. A
 * probe preloaded with NODE_OPTIONS writes the process's module list when it gets SIGUSR2.
 */
describe('the stub loads only what its command needs', () => {
  let fx: LocalFixture;
  let probeDir: string;
  const savedOptions = process.env.NODE_OPTIONS;

  beforeAll(async () => {
    // The daemon inherits NODE_OPTIONS from the provider's process when it starts it.
    probeDir = join(process.env.PTYRELAY_STATE_DIR!, 'module-probe');
    mkdirSync(probeDir, { recursive: true });
    const probe = join(probeDir, 'probe.cjs');
    writeFileSync(
      probe,
      `const { writeFileSync } = require('node:fs');\n` +
        `process.on('SIGUSR2', () => writeFileSync(${JSON.stringify(join(probeDir, 'modules-'))} + process.pid, ` +
        `[...process.moduleLoadList, ...Object.keys(require.cache).map((f) => 'File ' + f)].join('\\n')));\n`,
    );
    process.env.NODE_OPTIONS = `${savedOptions ?? ''} --require ${probe}`.trim();
    try {
      fx = await startLocal();
    } finally {
      if (savedOptions === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = savedOptions;
    }
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  /** Node's own modules process `pid` has loaded by now, and its files (`File <path>`). */
  async function loadedNow(pid: number): Promise<string[]> {
    const file = join(probeDir, `modules-${pid}`);
    process.kill(pid, 'SIGUSR2');
    return waitFor(
      () => {
        try {
          return readFileSync(file, 'utf8').split('\n');
        } catch {
          return undefined;
        }
      },
      5000,
      `the probe's module list of ${pid}`,
    );
  }

  it('a daemon with a shell, a client and its restore record: no perf_hooks, no fs/promises', async () => {
    const out = new OutputCollector(fx.provider);
    const r = await fx.provider.spawn({ cols: 80, rows: 24, command: 'sh', env: { HOME: fx.home } });
    out.bind(r.id);
    await fx.provider.write(r.id, 'echo probe-$((6*7))\n');
    await out.waitText('probe-42');
    // The restore record is saved a moment after the spawn (restore-persister.ts): wait for it.
    await waitFor(() => restoreRecordSaved(fx.stateDir), 10_000, 'the restore record');
    const loaded = await loadedNow(fx.daemonPid);
    expect(loaded).toContain('NativeModule net'); // the daemon's own list, not an empty one
    expect(
      loaded.filter((m) => /^NativeModule (perf_hooks|fs\/promises|internal\/perf\/performance)$/.test(m)),
    ).toEqual([]);
    // Of the stub's files only stub.cjs: the LSP libraries and the terminal emulator (parts beside
    // it) wait for a code-navigation query or a screen to restore; the model worker's part runs in
    // its own thread.
    const files = loaded.filter((m) => m.startsWith('File ')).map((m) => basename(m.slice(5)));
    expect(files).toContain('stub.cjs');
    expect(files.filter((f) => /^(stub-.*|model-worker)\.cjs$/.test(f))).toEqual([]);
    await fx.provider.shutdown(r.id, { immediate: true });
  }, 30_000);

  it('a connect bridge reaches the daemon without loading the daemon: no node-pty in it', async () => {
    const bridge: ChildProcess = spawn(
      process.execPath,
      [stubBundlePath(), 'connect', '--runtime-dir', fx.runtimeDir, '--start-marker', 'READY'],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    try {
      let text = '';
      bridge.stdout!.on('data', (d: Buffer) => {
        text += d.toString('latin1');
      });
      await waitFor(() => text.includes('READY\n'), 10_000, "the bridge's start marker");
      expect(readFileSync(`/proc/${bridge.pid}/maps`, 'utf8')).not.toContain('pty.node');
      expect(readFileSync(`/proc/${fx.daemonPid}/maps`, 'utf8')).toContain('pty.node');
    } finally {
      const exited = once(bridge, 'exit');
      bridge.stdin!.end();
      bridge.kill();
      await exited;
    }
  }, 30_000);
});

/** True once the daemon saved at least one restore record under `stateDir`. */
function restoreRecordSaved(stateDir: string): boolean {
  try {
    return readdirSync(join(stateDir, 'restore')).some((f) => f.endsWith('.json'));
  } catch {
    return false;
  }
}
