import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RestorePersister } from '../../agent-stub/restore/restore-persister.js';
import { RestoreStore, restoreScope } from '../../agent-stub/restore/restore-store.js';
import type { PtySession } from '../../agent-stub/session/pty-session.js';
import type { ScreenSnapshot } from '../../provider/contract.js';

const SCOPE = restoreScope('/run/user/1000/ptyrelay');

/** The parts of a PtySession the persister reads; its snapshots resolve when the test says so. */
function fakeSession(id: string) {
  const pending: Array<(s: ScreenSnapshot) => void> = [];
  const exitListeners: Array<() => void> = [];
  const session = {
    id,
    incarnationId: `inc-${id}`,
    command: '/bin/bash',
    args: [],
    cwd: '/home/me',
    title: 'bash',
    cols: 80,
    rows: 24,
    createdAt: Date.now(),
    pid: 0,
    alive: false,
    exited: { exitCode: 0 },
    ring: { head: 10 },
    onExited: (cb: () => void) => exitListeners.push(cb),
    snapshot: () => new Promise<ScreenSnapshot>((resolve) => pending.push(resolve)),
    snapshotAsParsed: () => new Promise<ScreenSnapshot>((resolve) => pending.push(resolve)),
  };
  const answer = (data: string) => {
    const resolve = pending.shift();
    if (!resolve) throw new Error('no snapshot was asked for');
    resolve({ data, seq: 10, cols: 80, rows: 24, alternateScreen: false } as ScreenSnapshot);
  };
  const exit = () => {
    for (const l of exitListeners) l();
  };
  return { session: session as unknown as PtySession, answer, exit, pending };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('RestorePersister', () => {
  let stateDir: string;
  let store: RestoreStore;

  beforeEach(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'ptr-persister-'));
    store = new RestoreStore(stateDir);
    store.ensureDir();
  });
  afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

  const persister = (sessions: PtySession[]) =>
    new RestorePersister({ store, scope: SCOPE, owner: '1:1', sessions: () => sessions, log: () => {} });

  it('survives a save that fails (a snapshot timeout, a full disk): logged, no unhandled rejection, and stop() resolves', async () => {
    const { session, exit, pending } = fakeSession('pty-2');
    const logged: string[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const p = new RestorePersister({
        store,
        scope: SCOPE,
        owner: '1:1',
        sessions: () => [session],
        log: (msg) => logged.push(msg),
      });
      p.track(session);
      exit();
      await until(() => pending.length === 1, 'the save to ask for a snapshot');
      pending.shift()?.(Promise.reject(new Error('snapshot of pty-2 took longer than 15000 ms')) as never);
      await until(() => logged.includes('cold-restore save failed'), 'the failure to be logged');
      // A removal that fails reaches its caller, and leaves the chain usable.
      rmSync(store.dir, { recursive: true, force: true });
      writeFileSync(store.dir, 'not a dir');
      await expect(p.forget('pty-2')).rejects.toThrow();
      await p.stop();
      // Unhandled rejections are reported on a later turn of the event loop.
      await new Promise((r) => setTimeout(r, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('removes a forgotten record at once, while a save still waits for its snapshot, and never writes it back', async () => {
    const { session, answer, exit, pending } = fakeSession('pty-1');
    const p = persister([session]);
    p.track(session);
    const file = store.fileOf(SCOPE, 'pty-1');
    exit();
    await until(() => pending.length === 1, 'the first save to ask for a snapshot');
    answer('first screen');
    await p.settle();
    expect(readFileSync(file, 'utf8')).toContain('first screen');

    // A second save (the session changed) waits for a snapshot that has not come yet.
    (session as unknown as { ring: { head: number } }).ring.head = 20;
    exit();
    await until(() => pending.length === 1, 'the second save to ask for a snapshot');
    const forgotten = p.forget('pty-1');
    await until(() => !existsSync(file), 'the record to go');
    answer('second screen');
    await forgotten;
    await p.stop();
    expect(existsSync(file)).toBe(false);
  });
});
