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
    // The tty echo and cat's copy of every line: exactly two, never a resent third.
    const count = (w: string) => out.text.split(`${w}\r\n`).length - 1;
    await waitFor(() => count('after') >= 2, 10_000, 'echo and copy');
    await provider.write(r.id, 'sync\r');
    await waitFor(() => count('sync') >= 2, 10_000, 'sync');
    expect(out.gaps).toEqual([]);
    const text = out.text;
    for (const w of ['before', 'one', 'two', 'three', 'after']) {
      expect(text.split(`${w}\r\n`).length - 1).toBe(2);
    }
    await provider.shutdown(r.id);
  });

  it('never makes a second PTY for a spawn retried across a reconnect', async () => {
    const first = await provider.spawn({ cols: 80, rows: 24, command: 'cat', requestId: 'retry-me' });
    provider.dropLink('local');
    const retried = await provider.spawn({ cols: 80, rows: 24, command: 'cat', requestId: 'retry-me' });
    expect(retried.id).toBe(first.id);
    expect(retried.incarnationId).toBe(first.incarnationId);
    expect(retried.reused).toBe(true);
    expect((await provider.listProcesses()).filter((p) => p.id === first.id)).toHaveLength(1);
    await provider.shutdown(first.id);
  });

  it('queues input during an outage up to 64 KiB per session, then refuses with INPUT_QUEUE_FULL', async () => {
    const out = new OutputCollector(provider);
    const r = await provider.spawn({ cols: 80, rows: 24, command: 'cat' });
    out.bind(r.id);
    // Hold the link down: the daemon is unreachable while it is paused by SIGSTOP.
    const { pid } = await provider.daemonInfo();
    process.kill(pid, 'SIGSTOP');
    try {
      provider.dropLink('local');
      const ok = provider.write(r.id, 'x'.repeat(60 * 1024));
      let code = '';
      await provider.write(r.id, 'y'.repeat(8 * 1024)).catch((e) => {
        code = e.code;
      });
      expect(code).toBe('INPUT_QUEUE_FULL');
      process.kill(pid, 'SIGCONT');
      await ok;
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await provider.shutdown(r.id, { immediate: true });
  });

  it('pauses and resumes the producer on demand', async () => {
    const out = new OutputCollector(provider);
    const r = await provider.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'while :; do echo tick; sleep 0.01; done'],
    });
    out.bind(r.id);
    await out.waitText('tick');
    await provider.pauseProducer(r.id);
    await new Promise((res) => setTimeout(res, 300));
    const frozen = out.nextSeq;
    await new Promise((res) => setTimeout(res, 700));
    expect(out.nextSeq).toBe(frozen);
    await provider.resumeProducer(r.id);
    await waitFor(() => out.nextSeq > frozen, 5000, 'output to resume');
    await provider.shutdown(r.id, { immediate: true });
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
    // Kill the daemon (and its PTYs) behind the provider's back; the next daemon gets a fresh id.
    process.kill(fx.daemonPid, 'SIGKILL');
    process.kill(old.pid, 'SIGKILL');
    await waitFor(() => reattached.length > 0, 10_000, 'expiry');
    expect(reattached[0]).toMatchObject({
      id: old.id,
      incarnationId: old.incarnationId,
      sessionExpired: true,
    });
    const fresh = await provider.spawn({ cols: 80, rows: 24, command: 'cat' });
    expect(fresh.id).not.toBe(old.id);
    expect(fresh.incarnationId).not.toBe(old.incarnationId);
    const out = new OutputCollector(provider, fresh.id);
    await provider.write(fresh.id, 'fresh\r');
    await out.waitText('fresh');
    expect(exits.filter((e) => e.incarnationId === fresh.incarnationId)).toEqual([]);
    await provider.dispose();
    await fx.cleanup();
  });
});
