import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyExitEvent, PtyReattachEvent } from '../../provider/contract.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { type LocalFixture, OutputCollector, startLocal, waitFor } from '../support/local-daemon.js';

const FAST_LINK = { ladder: { steps: [50, 100, 200] } };

describe('reconnect on the local link', () => {
  let fx: LocalFixture;
  let provider: LocalPtyProvider;
  beforeAll(async () => {
    fx = await startLocal();
    provider = new LocalPtyProvider({ runtimeDir: fx.runtimeDir, link: FAST_LINK });
  });
  afterAll(async () => {
    await provider.dispose();
    await fx.cleanup();
  });

  it('replays exactly what was missed and applies input typed during the outage exactly once', async () => {
    const out = new OutputCollector(provider);
    const r = await provider.spawn({ cols: 80, rows: 24, command: 'cat' });
    out.bind(r.id);
    await provider.write(r.id, 'before\r');
    await out.waitText('before');
    const states: string[] = [];
    provider.onLinkState?.((e) => states.push(e.state.state));
    provider.dropLink('local');
    // Typed while the link is down: queued, then applied once after the reconnect.
    const typed = ['one', 'two', 'three'].map((w) => provider.write(r.id, `${w}\r`));
    await Promise.all(typed);
    await out.waitText('three\r\n');
    expect(states).toContain('reconnecting');
    await waitFor(() => states.at(-1) === 'connected', 5000, 'connected state');
    // Output produced during and after the outage arrives once, contiguous.
    await provider.write(r.id, 'after\r');
    await out.waitText('after\r\n');
    expect(out.gaps).toEqual([]);
    const text = out.text;
    for (const w of ['before', 'one', 'two', 'three', 'after']) {
      expect(text.split(`${w}\r\n`).length - 1).toBe(2);
    }
    await provider.shutdown(r.id);
  });

  it('delivers output produced while the link was down, byte-exact', async () => {
    const out = new OutputCollector(provider);
    const r = await provider.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'read go; for i in $(seq 1 3000); do echo "row $i"; done; read end'],
    });
    out.bind(r.id);
    provider.dropLink('local');
    await provider.write(r.id, 'go\r');
    await out.waitText('row 3000\r\n');
    expect(out.gaps).toEqual([]);
    const rows = out.text.match(/row \d+\r\n/g) ?? [];
    expect(rows).toEqual(Array.from({ length: 3000 }, (_, i) => `row ${i + 1}\r\n`));
    await provider.shutdown(r.id);
  });

  it('delivers an exit that happened during the outage once, and never a stale one', async () => {
    const exits: PtyExitEvent[] = [];
    provider.onExit((e) => exits.push(e));
    const r = await provider.spawn({ cols: 80, rows: 24, command: 'sh', args: ['-c', 'read x; exit 5'] });
    provider.dropLink('local');
    await provider.write(r.id, 'x\r');
    await waitFor(() => exits.some((e) => e.id === r.id), 10_000, 'exit');
    await new Promise((res) => setTimeout(res, 300));
    provider.dropLink('local');
    await waitFor(() => provider.linkState('local').state === 'connected', 5000, 'reconnect');
    await new Promise((res) => setTimeout(res, 300));
    expect(exits.filter((e) => e.id === r.id)).toEqual([
      { id: r.id, incarnationId: r.incarnationId, exitCode: 5 },
    ]);
  });
});

describe('daemon restart', () => {
  it('reports sessions of the dead daemon as expired and never delivers their exit to a new incarnation', async () => {
    const fx = await startLocal();
    const provider = new LocalPtyProvider({ runtimeDir: fx.runtimeDir, link: FAST_LINK });
    const reattached: PtyReattachEvent[] = [];
    const exits: PtyExitEvent[] = [];
    provider.onReattach?.((e) => reattached.push(e));
    provider.onExit((e) => exits.push(e));
    const old = await provider.spawn({ cols: 80, rows: 24, command: 'cat' });
    // Kill the daemon (and its PTYs) behind the provider's back; the next daemon reuses the id.
    process.kill(fx.daemonPid, 'SIGKILL');
    process.kill(old.pid, 'SIGKILL');
    await waitFor(() => reattached.length > 0, 10_000, 'expiry');
    expect(reattached[0]).toMatchObject({
      id: old.id,
      incarnationId: old.incarnationId,
      sessionExpired: true,
    });
    const fresh = await provider.spawn({ cols: 80, rows: 24, command: 'cat' });
    expect(fresh.id).toBe(old.id);
    expect(fresh.incarnationId).not.toBe(old.incarnationId);
    const out = new OutputCollector(provider, fresh.id);
    await provider.write(fresh.id, 'fresh\r');
    await out.waitText('fresh');
    expect(exits.filter((e) => e.incarnationId === fresh.incarnationId)).toEqual([]);
    await provider.dispose();
    await fx.cleanup();
  });
});
