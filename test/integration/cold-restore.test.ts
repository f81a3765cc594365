/**
 * Cold restore on the local host (no containers needed): the daemon saves each changed session to
 * `<stateDir>/restore/`; when the daemon and its PTYs die (as in a reboot), the next daemon reports
 * the terminal as sessionExpired with coldRestore (last screen, scrollback, cwd, title) on reattach,
 * attach and list, keeps its id reserved, and removes the record when the terminal is dismissed or
 * a session is shut down cleanly. The container suite (test/containers/host-reboot.test.ts) does the
 * same across a real `docker restart`.
 */
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyReattachEvent } from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { type LocalFixture, OutputCollector, startLocal, waitFor } from '../support/local-daemon.js';

const FAST_LINK = { ladder: { steps: [50, 100, 200] } };
const TITLE = 'cold-title';
const LINES = 40;

describe('cold restore after the daemon and its PTYs died', () => {
  let fx: LocalFixture;
  let provider: LocalPtyProvider;
  let restoreDir: string;
  let workDir: string;

  beforeAll(async () => {
    fx = await startLocal();
    restoreDir = join(fx.stateDir, 'restore');
    workDir = join(fx.home, 'work dir');
    mkdirSync(workDir);
    provider = new LocalPtyProvider({
      runtimeDir: fx.runtimeDir,
      link: FAST_LINK,
      daemonArgs: ['--state-dir', fx.stateDir],
    });
  });

  afterAll(async () => {
    await provider?.dispose();
    await fx?.cleanup();
  });

  const records = () => readdirSync(restoreDir).filter((f) => f.endsWith('.json'));

  it('reports the saved screen, cwd and title, reserves the id, and removes records on purpose only', async () => {
    const reattached: PtyReattachEvent[] = [];
    provider.onReattach?.((e) => reattached.push(e));
    const out = new OutputCollector(provider);
    const old = await provider.spawn({
      cols: 80,
      rows: 24,
      command: 'bash',
      args: ['--norc', '--noprofile'],
    });
    out.bind(old.id, old.providerSequence.value);
    await provider.write(
      old.id,
      `PS1='$ '; cd '${workDir}' && printf '\\033]0;${TITLE}\\007' && for i in $(seq 1 ${LINES}); do echo "cold-line-$i"; done\r`,
    );
    await out.waitText(`cold-line-${LINES}`);
    const file = await waitFor(
      () => {
        const f = records()[0];
        const text = f ? readFileSync(join(restoreDir, f), 'utf8') : '';
        return text.includes(`cold-line-${LINES}`) && text.includes(TITLE) ? f : undefined;
      },
      20_000,
      'the record',
    );
    expect(statSync(join(restoreDir, file)).mode & 0o777).toBe(0o600);
    expect(statSync(restoreDir).mode & 0o777).toBe(0o700);
    expect(readdirSync(restoreDir).filter((f) => f.endsWith('.tmp'))).toEqual([]);

    // The daemon and its PTYs die at once, as in a power cut; the provider starts a new daemon.
    process.kill(fx.daemonPid, 'SIGKILL');
    process.kill(old.pid, 'SIGKILL');
    const expired = await waitFor(
      () => reattached.find((e) => e.id === old.id && e.sessionExpired),
      30_000,
      'the expiry',
    );
    expect(expired.coldRestore).toMatchObject({ cwd: workDir, lastTitle: TITLE, cols: 80, rows: 24 });
    expect(expired.coldRestore?.scrollback).toContain('cold-line-1');
    expect(expired.coldRestore?.scrollback).toContain(`cold-line-${LINES}`);

    const again = await provider.attach(old.id);
    expect(again).toMatchObject({ sessionExpired: true, exited: { exitCode: 137, signal: 'SIGKILL' } });
    expect(again.coldRestore?.scrollback).toBe(expired.coldRestore?.scrollback);
    expect((await provider.listProcesses()).find((p) => p.id === old.id)).toMatchObject({
      coldRestored: true,
      cwd: workDir,
    });

    const fresh = await provider.spawn({
      cols: 80,
      rows: 24,
      command: 'bash',
      args: ['--norc'],
      cwd: workDir,
    });
    expect(fresh.id).not.toBe(old.id);
    const freshOut = new OutputCollector(provider).bind(fresh.id, fresh.providerSequence.value);
    await provider.write(fresh.id, 'echo "at=$(pwd)"\r');
    await freshOut.waitText(`at=${workDir}`);
    await waitFor(() => records().length === 2, 10_000, 'the new session saved too');

    // Dismissing the restored terminal removes its record; a clean shutdown removes the other.
    await provider.shutdown(old.id);
    const err = await provider.attach(old.id).catch((e: unknown) => e);
    expect(isPtyRelayError(err, 'NOT_FOUND'), String(err)).toBe(true);
    await provider.shutdown(fresh.id);
    await waitFor(() => records().length === 0, 10_000, 'no records left');
  }, 120_000);
});
