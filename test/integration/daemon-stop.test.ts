import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyReattachEvent } from '../../provider/contract.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { daemonAnswers, type LocalFixture, pidAlive, startLocal, waitFor } from '../support/local-daemon.js';

describe('a daemon stopped on request stays stopped until the next use', () => {
  let fx: LocalFixture;
  let stopper: LocalPtyProvider;
  let viewer: LocalPtyProvider;
  beforeAll(async () => {
    fx = await startLocal();
    stopper = new LocalPtyProvider({ runtimeDir: fx.runtimeDir });
    viewer = new LocalPtyProvider({ runtimeDir: fx.runtimeDir });
  });
  afterAll(async () => {
    await viewer.dispose();
    await stopper.dispose();
    await fx.cleanup();
  });

  it('every link goes idle instead of starting a new daemon; its sessions expire at once', async () => {
    const r = await stopper.spawn({ cols: 80, rows: 24, command: 'cat' });
    await viewer.attach(r.id);
    const reattached: PtyReattachEvent[] = [];
    viewer.onReattach?.((e) => reattached.push(e));
    const viewerStates: string[] = [];
    viewer.onLinkState?.((e) => viewerStates.push(e.state.state));
    const fixtureStates: string[] = [];
    fx.provider.onLinkState?.((e) => fixtureStates.push(e.state.state));

    const stopped = await stopper.stopDaemon('local');
    expect(stopped.info.pid).toBe(fx.daemonPid);
    expect(stopped.terminals).toEqual([r.id]);
    await waitFor(() => !pidAlive(fx.daemonPid), 15_000, 'daemon exit');
    // The links that did not ask for the stop heard it: idle, no reconnect, no new daemon.
    await waitFor(() => viewerStates.at(-1) === 'idle', 5000, 'viewer link idle');
    await waitFor(() => fixtureStates.at(-1) === 'idle', 5000, 'fixture link idle');
    expect(viewerStates).not.toContain('reconnecting');
    expect(fixtureStates).not.toContain('reconnecting');
    expect(await daemonAnswers(fx.runtimeDir)).toBe(false);
    // What the viewer showed ended with the daemon, without waiting for its next use.
    expect(reattached).toEqual([expect.objectContaining({ id: r.id, sessionExpired: true })]);

    // The next use starts a new daemon, for any of them.
    const { pid } = await viewer.daemonInfo();
    expect(pid).not.toBe(fx.daemonPid);
    expect(await daemonAnswers(fx.runtimeDir)).toBe(true);
    expect((await fx.provider.daemonInfo()).pid).toBe(pid);
    expect(await viewer.listProcesses()).toEqual([]);
  });
});
