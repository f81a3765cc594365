import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtySession } from '../../agent-stub/session/pty-session.js';
import { type ModelRecovery, ScreenModelHost } from '../../agent-stub/session/screen-model.js';
import { SessionRegistry } from '../../agent-stub/session/session-registry.js';
import { inProcessLoggedSessions } from '../support/in-process-sessions.js';
import { waitFor } from '../support/local-daemon.js';

const MiB = 1024 * 1024;

/**
 * The model worker holds every session's screen. When it ends without being asked to (an uncaught
 * error, its heap exhausted: a crash is the fault injected here), each session's model opens again
 * in a new worker, rebuilt from the session's log: its snapshots show what they showed before,
 * at the same position, and follow the output from then on.
 */
describe('losing the screen model worker', () => {
  const env = inProcessLoggedSessions('ptr-model-loss-', {
    ringBytes: 4 * MiB,
    scrollbackRows: 1000,
    logBytes: 64 * MiB,
    logKeepsBytes: 56 * MiB,
  });

  const spawnCat = (first: string): PtySession =>
    env.registry.spawn({ cols: 60, rows: 10, command: 'sh', args: ['-c', `stty -echo; ${first}; exec cat`] })
      .session;

  async function screenWith(s: PtySession, text: string) {
    return waitFor(
      async () => {
        const snap = await s.snapshot();
        return snap.data.includes(text) ? snap : undefined;
      },
      10_000,
      `${text} on the screen`,
    );
  }

  it("rebuilds every session's screen from its log and keeps following the output", async () => {
    // Scrollback, colours and an alternate screen: what a fresh model would not show by itself.
    const a = spawnCat(`seq 1 40; printf '\\033[31mRED\\033[0m A-READY\\n'`);
    const b = spawnCat(`printf '\\033[?1049h\\033[2;5HALT-SCREEN B-READY'`);
    const beforeA = await screenWith(a, 'A-READY');
    const beforeB = await screenWith(b, 'B-READY');
    expect(beforeB.alternateScreen).toBe(true);

    const losses = env.model.losses;
    await env.model.crashForTest();
    expect(env.model.losses).toBe(losses + 1);

    const afterA = await a.snapshot();
    const afterB = await b.snapshot();
    expect(afterA).toEqual(beforeA);
    expect(afterB).toEqual(beforeB);

    // Output after the loss lands in the rebuilt models, once.
    a.write(new TextEncoder().encode('AFTER-LOSS\n'));
    const later = await screenWith(a, 'AFTER-LOSS');
    expect(later.data.split('AFTER-LOSS').length - 1).toBe(1);
    expect(later.data).toContain('A-READY');
    expect(later.seq).toBe(a.ring.head);
  });

  it('answers a snapshot asked while the worker is lost', async () => {
    const s = spawnCat(`printf 'MIDWAY-READY\\n'`);
    await screenWith(s, 'MIDWAY-READY');
    const asked = s.snapshot();
    await env.model.crashForTest();
    const snap = await asked;
    expect(snap.data).toContain('MIDWAY-READY');
    expect(snap.seq).toBe(s.ring.head);
  });

  it('stops rebuilding from the log once the worker keeps failing, and keeps answering', async () => {
    // Output that made the worker fail would fail every rebuild again: after three losses within
    // a minute the models start empty and follow the output from then on.
    const s = spawnCat(`printf 'OLD-OUTPUT\\n'`);
    await screenWith(s, 'OLD-OUTPUT');
    const rebuilt: boolean[] = [];
    const off = env.model.onLost((_why, r) => rebuilt.push(r === 'rebuild'));
    for (let i = 0; i < 5 && rebuilt.at(-1) !== false; i++) await env.model.crashForTest();
    off();
    expect(rebuilt.at(-1)).toBe(false);
    expect(rebuilt.filter((r) => r)).toHaveLength(rebuilt.length - 1);
    const empty = await s.snapshot();
    expect(empty.data).not.toContain('OLD-OUTPUT');
    s.write(new TextEncoder().encode('NEW-OUTPUT\n'));
    const later = await screenWith(s, 'NEW-OUTPUT');
    expect(later.seq).toBe(s.ring.head);
  });
});

describe('a model worker that cannot start', () => {
  let root: string;
  let model: ScreenModelHost;
  let registry: SessionRegistry;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'ptr-model-nostart-'));
    // The fault: a worker whose code throws at once, every time it is started.
    model = new ScreenModelHost({ source: 'throw new Error("this model worker cannot start")' });
    registry = new SessionRegistry(model, { ringBytes: MiB, scrollbackRows: 100 }, join(root, 'shell'));
  });
  afterAll(async () => {
    await registry?.shutdownAll();
    await model?.dispose();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('is not restarted in a loop; the session runs on and says its model is off', async () => {
    const recoveries: ModelRecovery[] = [];
    model.onLost((_why, r) => recoveries.push(r));
    const s = registry.spawn({
      cols: 60,
      rows: 10,
      command: 'sh',
      args: ['-c', 'stty -echo; exec cat'],
    }).session;
    await waitFor(() => recoveries.includes('none'), 20_000, 'the worker given up on');
    expect(recoveries.slice(0, 3)).toEqual(['rebuild', 'rebuild', 'rebuild']);
    const losses = model.losses;
    // Output keeps flowing into the session (its ring) and starts no worker.
    s.write(new TextEncoder().encode('STILL-RUNNING\n'));
    await waitFor(() => s.ring.slice(0, s.ring.head)?.toString().includes('STILL-RUNNING'), 10_000, 'output');
    await new Promise((r) => setTimeout(r, 300));
    expect(model.losses).toBe(losses);
    await expect(s.snapshot()).rejects.toMatchObject({ code: 'PROTOCOL_ERROR', message: /is off/ });
  });
});
